"""`python -m mbgpu.commands.reference` prints docs/commands.md from the command table."""
from mbgpu.commands.helptext import markdown_reference
from mbgpu.commands.table import build_table

if __name__ == "__main__":
    print(markdown_reference(build_table()), end="")
