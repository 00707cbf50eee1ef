"""Executes NEXUS files and command lines in order: data blocks, trees blocks and mrbayes blocks.

One `Interpreter` per session owns the `Settings` and the `Console`; it resolves command names
through the table and hands each command to its handler in `mbgpu.commands.handlers`.
"""
from __future__ import annotations

import os
from pathlib import Path

from mbgpu.commands import handlers
from mbgpu.commands.params import resolve
from mbgpu.commands.table import build_table
from mbgpu.console import Console
from mbgpu.errors import CommandError, InputFileError, MbgpuError, NexusError, NotImplementedYet
from mbgpu.nexus import datablock
from mbgpu.nexus.blocks import Command, check_header, iter_commands
from mbgpu.nexus.tokenizer import Source
from mbgpu.settings import Settings

DATA_BLOCKS = ("data", "characters")
COMMAND_BLOCKS = ("mrbayes", "mrbayes_block", "paup", "assumptions", "sets")


class Quit(Exception):
    """`quit` was executed: stop reading commands."""


class Interpreter:
    """Runs commands against one Settings; the CLI and the tests drive it."""

    def __init__(self, console: Console | None = None):
        self.table = build_table()
        self.settings = Settings.fresh(self.table)
        self.console = console or Console()
        self._data_state: datablock.DataBlockState | None = None
        self._translate: dict[str, str] = {}
        self._taxlabels: list[str] | None = None
        self._depth = 0
        self.current_file = ""

    # -- files and text -------------------------------------------------------------------
    def run_file(self, path: str) -> None:
        """Execute a NEXUS file (its blocks in order)."""
        p = Path(path)
        if not p.is_file():
            raise InputFileError("cannot open '%s': %s" % (path, "not a file" if p.exists() else "no such file"))
        try:
            text = p.read_bytes().decode("utf-8", errors="replace")
        except OSError as exc:
            raise InputFileError("cannot read '%s': %s" % (path, exc.strerror)) from None
        if self._depth > 20:
            raise InputFileError("'%s': execute nested more than 20 deep (a file executing itself?)" % path)
        src = Source(text, str(path))
        start = check_header(src)
        saved, self.current_file = self.current_file, str(p)
        self._depth += 1
        self.console.print("   Executing file \"%s\"" % p.name)
        try:
            for cmd in iter_commands(src, start):
                self.execute(cmd)
        finally:
            self._depth -= 1
            self.current_file = saved

    def run_text(self, text: str, name: str = "<stdin>") -> None:
        """Execute commands typed at the prompt (mrbayes commands; `begin ... end;` also works)."""
        src = Source(text, name)
        for cmd in iter_commands(src, 0, in_block="mrbayes"):
            self.execute(cmd)

    # -- dispatch -------------------------------------------------------------------------
    def execute(self, cmd: Command) -> None:
        """Run one command of any block."""
        if cmd.block in DATA_BLOCKS or cmd.block == "taxa":
            return self._data_command(cmd)
        if cmd.block == "trees":
            return self._trees_command(cmd)
        if cmd.block in COMMAND_BLOCKS:
            return self.command(cmd)
        # unknown blocks (e.g. 'notes', 'codons') are skipped as MrBayes does

    def command(self, cmd: Command) -> None:
        """Resolve and run one command of the MrBayes language."""
        head = cmd.tokens[0]
        if head.kind == "punct":
            raise cmd.error("expected a command, found '%s'" % head.text, head, CommandError)
        try:
            name = resolve(head.text, [s.name for s in self.table.values()], "command")
        except CommandError as err:
            raise cmd.error(err.message, head, CommandError) from None
        spec = self.table[name.lower()]
        if not spec.implemented:
            raise cmd.error("command '%s' is recognised but not implemented yet in mbgpu" % spec.name,
                            head, NotImplementedYet)
        handlers.run(self, spec, cmd)

    def _data_command(self, cmd: Command) -> None:
        name = cmd.name
        if self._data_state is None or cmd.block_start != getattr(self, "_block_start", None):
            self._data_state = datablock.DataBlockState(taxlabels=self._taxlabels)
            self._block_start = cmd.block_start
        st = self._data_state
        if name == "dimensions":
            datablock.dimensions(cmd, st)
        elif name == "format":
            datablock.format_command(cmd, st)
        elif name == "taxlabels":
            self._taxlabels = st.taxlabels = datablock.taxlabels(cmd)
        elif name == "matrix":
            self.settings.set_data(datablock.matrix(cmd, st), self.current_file)
            self._report_data()
        elif name in ("charstatelabels", "charlabels", "statelabels", "eliminate", "options"):
            pass
        else:
            raise cmd.error("unknown command '%s' in a %s block" % (cmd.tokens[0].text, cmd.block),
                            cmd.tokens[0], NexusError)

    def _trees_command(self, cmd: Command) -> None:
        if cmd.name == "translate":
            self._translate = datablock.translate(cmd)
        elif cmd.name in ("tree", "utree"):
            rec = datablock.tree(cmd, self._translate)
            self.settings.trees[rec.name] = rec
        else:
            raise cmd.error("unknown command '%s' in a trees block" % cmd.tokens[0].text, cmd.tokens[0],
                            NexusError)

    def _report_data(self) -> None:
        m = self.settings.matrix
        assert m is not None
        kinds = sorted(set(m.datatypes), key=m.datatypes.index)
        self.console.print("   Defining new matrix with %d taxa and %d characters" % (m.ntax, m.nchar))
        self.console.print("   Data is %s" % ", ".join(k.capitalize() for k in kinds))
        self.console.print("   Setting default partition (%d division%s)"
                           % (len(self.settings.divisions), "s" if len(self.settings.divisions) > 1 else ""))

    def resolve_path(self, name: str) -> str:
        """A file name relative to the file being executed (or the working directory)."""
        if os.path.isabs(name) or not self.current_file:
            return name
        return os.path.join(os.path.dirname(self.current_file), name)

    def fail(self, err: MbgpuError) -> None:
        raise err
