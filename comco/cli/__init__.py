"""The `comco` command: one module per verb group, the shared options in `options`.

Only typer loads here; each verb imports the package faces it needs when it runs.
"""


def main() -> None:
    from comco.cli.app import main as run

    run()
