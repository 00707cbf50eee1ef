from mbgpu.commands.helptext import markdown_reference
from mbgpu.commands.table import build_table
from tests.conftest import ROOT


def test_command_reference_is_current():
    """docs/commands.md is generated from the table; regenerate with python -m mbgpu.commands.reference."""
    assert (ROOT / "docs" / "commands.md").read_text() == markdown_reference(build_table())
