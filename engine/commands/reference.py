"""`python -m engine.commands.reference` prints docs/commands.md from the command table."""
from engine.commands.helptext import markdown_reference
from engine.commands.table import build_table

if __name__ == "__main__":
    print(markdown_reference(build_table()), end="")
