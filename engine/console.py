"""Screen output of a session, optionally copied to a log file (`log start filename=...`)."""
from __future__ import annotations

import sys
from typing import TextIO


class Console:
    """Prints lines to a stream and, while logging, to a log file as well."""

    def __init__(self, stream: TextIO | None = None):
        self.stream = stream if stream is not None else sys.stdout
        self.log: TextIO | None = None
        self.log_name = ""

    def print(self, text: str = "") -> None:
        self.stream.write(text + "\n")
        if self.log is not None:
            self.log.write(text + "\n")
            self.log.flush()

    def start_log(self, path: str, append: bool) -> None:
        self.stop_log()
        self.log = open(path, "a" if append else "w", encoding="utf-8")
        self.log_name = path

    def stop_log(self) -> None:
        if self.log is not None:
            self.log.close()
        self.log, self.log_name = None, ""
