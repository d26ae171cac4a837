"""Shared test builders (VLMs): a tiny random LLaVA saved as a transformers image-text-to-text
folder, with a word-level tokenizer the test writes and a chat template, so `--model vlm:DIR`
runs its whole path (load, prompt, decode, parse, score, report) in seconds."""

from __future__ import annotations

from pathlib import Path

IMAGE_SIDE, PATCH = 32, 8
SPECIALS = ["<pad>", "<unk>", "<s>", "</s>", "<image>"]
# one user turn (image, text), then where the assistant's answer begins
CHAT_TEMPLATE = ("{% for m in messages %}{{ m['role'] }} : {% for c in m['content'] %}"
                 "{% if c['type'] == 'image' %}<image> {% else %}{{ c['text'] }} {% endif %}{% endfor %}"
                 "{% endfor %}{% if add_generation_prompt %}assistant : {% endif %}")


def vocabulary() -> list[str]:
    """Every word of the simco names, plurals and synonyms, the prompts and the captions: a random
    model's answers are then words the parser can find."""
    import re

    from comco.manifest import load_object_set
    from comco.probes.mention import load_prompts

    words = set()
    for o in load_object_set("simco").objects:
        for form in (o.name, o.plural, *o.synonyms):
            words |= set(form.split())
    prompts = load_prompts()
    for text in (*prompts.mention.values(), prompts.matching, "user assistant a an and the photo of on grey floor"):
        words |= set(re.findall(r"\w+|[^\w\s]", text.lower()))
    return sorted(words | {",", ".", ":"})


def save_tiny_llava(folder: Path, seed: int = 0) -> Path:
    """A 1-layer, 32-wide random LLaVA (CLIP vision tower, Llama text model) and its processor
    (CLIP image processor, fast word-level tokenizer, chat template), saved to `folder`."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import (
        CLIPImageProcessor,
        CLIPVisionConfig,
        LlamaConfig,
        LlavaConfig,
        LlavaForConditionalGeneration,
        LlavaProcessor,
        PreTrainedTokenizerFast,
    )

    vocab = {t: i for i, t in enumerate([*SPECIALS, *vocabulary()])}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Punctuation()])
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", unk_token="<unk>", bos_token="<s>",
                                   eos_token="</s>", extra_special_tokens={"image_token": "<image>"})
    images = CLIPImageProcessor(size={"shortest_edge": IMAGE_SIDE}, crop_size={"height": IMAGE_SIDE,
                                                                               "width": IMAGE_SIDE})
    # the CLIP tower's class token is dropped ("default"), and counted as the one additional token
    processor = LlavaProcessor(image_processor=images, tokenizer=fast, patch_size=PATCH, chat_template=CHAT_TEMPLATE,
                               vision_feature_select_strategy="default", image_token="<image>",
                               num_additional_image_tokens=1)
    torch.manual_seed(seed)
    config = LlavaConfig(
        vision_config=CLIPVisionConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                                       num_attention_heads=2, image_size=IMAGE_SIDE, patch_size=PATCH),
        text_config=LlamaConfig(vocab_size=len(vocab), hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                                num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=256,
                                pad_token_id=0, bos_token_id=2, eos_token_id=3),
        image_token_index=vocab["<image>"], vision_feature_select_strategy="default", vision_feature_layer=-1)
    LlavaForConditionalGeneration(config).save_pretrained(folder)
    processor.save_pretrained(folder)
    return folder
