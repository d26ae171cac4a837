"""The text tower's attention as a variable: open_clip's causal CLIP, or the same tower
with every real token attending to every other (no causal mask).

ComCO (section 4.2.1) argues the first-mention bias is not the causal mask's doing because
a bidirectional XLM-RoBERTa tower is just as biased; here the two differ in the mask (and
the pooling it forces) alone. Without the mask the end-of-text token is no longer the one
position that has read the whole caption, so the pooling is named:
- "mean": the mean over the real tokens (start-of-text .. end-of-text);
- "first": the start-of-text token, a learned embedding at position 0 that attends to the
  whole caption (BERT's [CLS]).
Padding is masked out of attention and pooling, so a text's features do not depend on how
far it is padded, and a batch is cut after its longest text (as the causal tower's trimmed
forward, comco.models.openclip.encode_text_trimmed, does).

A checkpoint records the choice in its model_spec as `text_tower`
({"attention": "bidirectional", "pool": "mean"}); a causal tower has no such key, so every
checkpoint written before this module still builds as it was.
"""

from __future__ import annotations

TEXT_ATTENTIONS = ("causal", "bidirectional")
TEXT_POOLS = ("mean", "first")  # bidirectional towers only; a causal tower pools at end-of-text


def text_tower_spec(attention: str, pool: str | None) -> dict | None:
    """The model_spec entry for a text tower (None for open_clip's causal tower).

    Args:
        attention: "causal" or "bidirectional". pool: "mean" or "first" (bidirectional only).
    """
    from comco.errors import UserError

    if attention not in TEXT_ATTENTIONS:
        raise UserError(f"text attention '{attention}': use one of {', '.join(TEXT_ATTENTIONS)}")
    if attention == "causal":
        if pool not in (None, "eot"):
            raise UserError(f"text pool '{pool}': a causal tower pools at the end-of-text token")
        return None
    if pool not in TEXT_POOLS:
        raise UserError(f"text pool '{pool}': a bidirectional tower pools by one of {', '.join(TEXT_POOLS)}")
    return {"attention": "bidirectional", "pool": pool}


def bidirectional_clip(cfg: dict, pool: str):
    """open_clip's CLIP with the bidirectional text tower (random weights, as open_clip draws them)."""
    import open_clip

    class BidirectionalCLIP(open_clip.CLIP):
        """CLIP whose text tower attends both ways over the real tokens (see the module doc)."""

        def __init__(self, *args, text_pool: str, **kwargs):
            super().__init__(*args, **kwargs)
            self.attn_mask = None  # the causal buffer: gone
            self.text_pool = text_pool

        def encode_text(self, text, normalize: bool = False):
            import torch.nn.functional as F

            x, real = token_states(self, text)
            if self.text_pool == "first":
                x = x[:, 0]
            else:
                w = real.unsqueeze(-1).to(x.dtype)
                x = (x * w).sum(1) / w.sum(1)
            if self.text_projection is not None:
                x = self.text_projection(x) if hasattr(self.text_projection, "weight") else x @ self.text_projection
            return F.normalize(x, dim=-1) if normalize else x

    return BidirectionalCLIP(**cfg, text_pool=pool)


def token_states(model, text):
    """(per-token states after the final LayerNorm, real-token mask), both cut after the
    batch's last end-of-text token; with the model's causal mask when it has one, otherwise
    every real token attends to every real token.

    Args:
        model: an open_clip CLIP (either tower). text: token ids [B, L] (end-of-text = the largest id).
    """
    import torch

    eot = text.argmax(-1)
    n = int(eot.max()) + 1
    t = text[:, :n]
    real = torch.arange(n, device=text.device).unsqueeze(0) <= eot.unsqueeze(1)  # [B, n]
    cast = model.transformer.get_cast_dtype()
    x = model.token_embedding(t).to(cast) + model.positional_embedding[:n].to(cast)
    causal = getattr(model, "attn_mask", None)
    if causal is not None:
        mask = causal[:n, :n]
    else:
        heads = model.transformer.resblocks[0].attn.num_heads
        keys = torch.zeros(real.shape, dtype=x.dtype, device=x.device).masked_fill(~real, float("-inf"))
        mask = keys.unsqueeze(1).expand(-1, n, -1).repeat_interleave(heads, 0)  # [B * heads, n, n]
    x = model.transformer(x, attn_mask=mask)
    return model.ln_final(x), real
