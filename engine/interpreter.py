"""Executes NEXUS files and command lines in order: data blocks, trees blocks and mrbayes blocks.

One `Interpreter` per session owns the `Settings` and the `Console`; it resolves command names
through the table and hands each command to its handler in `mbgpu.commands.handlers`.

The blocks read are MrBayes 3.2.7a's: `taxa`, `data`, `characters` (`nexus.datablock.DataBlocks`),
`trees` and `mrbayes`. Every other block (`sets`, `assumptions`, `paup`, `notes`, `mesquite`, ...)
is skipped unread with MrBayes' note `Skipping "NAME" block`; MrBayes executes none of their commands.
"""
from __future__ import annotations

import os
from pathlib import Path

from mbgpu.commands import handlers
from mbgpu.commands.params import resolve
from mbgpu.commands.table import build_table, table_defaults
from mbgpu.console import Console
from mbgpu.errors import CommandError, InputFileError, MbgpuError, NexusError, NotImplementedYet
from mbgpu.nexus import datablock
from mbgpu.nexus.blocks import BlockEvent, Command, Item, check_header, iter_commands
from mbgpu.nexus.tokenizer import Source
from mbgpu.settings import Settings

DATA_BLOCKS = ("data", "characters", "taxa")
SKIP_NOTE = '   Skipping "%s" block'  # MrBayes' words (DoBeginParm), the name as written in the file


class Interpreter:
    """Runs commands against one Settings; the CLI and the tests drive it."""

    def __init__(self, console: Console | None = None):
        self.table = build_table()
        self.settings = Settings.fresh(table_defaults(self.table))
        self.console = console or Console()
        self._data = datablock.DataBlocks()
        self._translate: dict[str, str] = {}
        self._depth = 0
        self.current_file = ""
        self.ask = None   # callable(question) -> bool in an interactive session (mbgpu.session); None: batch

    # -- files and text -------------------------------------------------------------------
    def run_file(self, path: str) -> None:
        """Execute a NEXUS file: its blocks in order, and commands outside any block as MrBayes does (as
        typed at its prompt)."""
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
            after_execute = None          # the line of the last `execute` of this file
            for cmd in iter_commands(src, start, outside="mrbayes"):
                if isinstance(cmd, Command) and cmd.tokens and after_execute is not None and \
                        src.where(cmd.tokens[0].pos).line == after_execute:
                    raise cmd.error("a command after 'execute' on the same line (MrBayes 3.2.7a skips the rest of "
                                    "that line: put it on the next line) is not supported yet", cmd.tokens[0],
                                    NotImplementedYet)
                self.execute(cmd)
                if isinstance(cmd, Command) and self._is_execute(cmd):
                    after_execute = src.where(cmd.tokens[-1].pos).line
        finally:
            self._depth -= 1
            self.current_file = saved

    def _is_execute(self, cmd: Command) -> bool:
        """`cmd` is an `execute` (or its abbreviation) of a mrbayes block or outside any block."""
        if cmd.block not in ("mrbayes", "") or not cmd.tokens or cmd.tokens[0].kind == "punct":
            return False
        try:
            return resolve(cmd.tokens[0].text, [s.name for s in self.table.values()], "command") == "Execute"
        except CommandError:
            return False

    def run_text(self, text: str, name: str = "<stdin>") -> None:
        """Execute commands typed at the prompt (mrbayes commands; `begin ... end;` also works)."""
        src = Source(text, name)
        for cmd in iter_commands(src, 0, in_block="mrbayes"):
            self.execute(cmd)

    # -- dispatch -------------------------------------------------------------------------
    def execute(self, item: Item) -> None:
        """Run one command of any block, or act on a block's begin/end or a skipped block."""
        if isinstance(item, BlockEvent):
            return self._block_event(item)
        if item.block in DATA_BLOCKS:
            return self._data_command(item)
        if item.block == "trees":
            return self._trees_command(item)
        assert item.block == "mrbayes", "iter_commands yields commands of the blocks read only"
        return self.command(item)

    def _block_event(self, ev: BlockEvent) -> None:
        if ev.kind == "skip":
            self.console.print(SKIP_NOTE % ev.name)
        elif ev.block in DATA_BLOCKS and ev.kind == "begin":
            if ev.block == "taxa" and self.settings.matrix is not None:
                # MrBayes frees the matrix when a taxa block begins (its data must follow in a characters block)
                self.settings.matrix = None
                self.console.print("   Deleting previously defined characters")
            self._data.begin(ev)
        elif ev.block in DATA_BLOCKS and ev.kind == "end":
            for note in self._data.end(ev):
                self.console.print(note)

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
            raise cmd.error("the command %s is not supported yet" % spec.name.lower(), head, NotImplementedYet)
        handlers.run(self, spec, cmd)

    def _data_command(self, cmd: Command) -> None:
        m = self._data.command(cmd)
        if m is not None:
            self.settings.set_data(m, self.current_file)
            self._report_data()

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
