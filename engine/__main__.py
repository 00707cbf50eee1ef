"""`python -m mbgpu ...` is the same as `mbgpu ...`."""
import sys

from .cli import main

sys.exit(main())
