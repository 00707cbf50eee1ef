"""Small helpers shared by the tests: run NEXUS text through an Interpreter with captured output."""
import io

from mbgpu.console import Console
from mbgpu.interpreter import Interpreter

DNA4 = """#NEXUS
begin data;
  dimensions ntax=4 nchar=8;
  format datatype=dna gap=- missing=?;
  matrix
  A  ACGTACGT
  B  ACGTACGA
  C  ACGTTCGA
  D  ACG?TCG-
  ;
end;
"""


def interp_for(text: str, tmp_path, name: str = "in.nex") -> Interpreter:
    """Write `text` to tmp_path/name and execute it; returns the interpreter (output captured)."""
    path = tmp_path / name
    path.write_text(text)
    it = Interpreter(Console(io.StringIO()))
    it.run_file(str(path))
    return it


def output(it: Interpreter) -> str:
    return it.console.stream.getvalue()
