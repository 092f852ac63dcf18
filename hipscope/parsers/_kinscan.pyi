# Type stub of the optional C extension _kinscan (built from _kinscan.c; see setup.py).
from typing import Any

def scan(buffer: Any, split: int = ..., /) -> tuple[Any, ...] | None: ...
