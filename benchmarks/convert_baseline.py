"""Contenders for the Responses -> Chat benchmark, each run as its own process.

  python benchmarks/convert_baseline.py agents-jsonl IN OUT      # orjson loop + openai-agents Converter
  python benchmarks/convert_baseline.py memory-agents IN N       # Converter over N records parsed in memory
  python benchmarks/convert_baseline.py memory-chatlake IN N     # chatlake, same N, canonical table
  python benchmarks/convert_baseline.py io-alone IN DIR FILE...  # read IN, copy each FILE into DIR

The in-memory contenders print the seconds spent converting only (parsing excluded).
"""

from __future__ import annotations

import itertools
import sys
import time


def agents_jsonl(src: str, dst: str) -> None:
    import orjson
    from agents.models.chatcmpl_converter import Converter

    failed = 0
    with open(src, "rb") as f, open(dst, "wb") as out:
        for line in f:
            rec = orjson.loads(line)
            try:
                messages = Converter.items_to_messages(rec["input"])
            except Exception:
                failed += 1
                continue
            out.write(orjson.dumps({"messages": messages}) + b"\n")
    print(f"openai-agents rejected {failed} records", file=sys.stderr)


def _first(src: str, n: int) -> list[bytes]:
    with open(src, "rb") as f:
        return list(itertools.islice(f, n))


def memory_agents(src: str, n: int) -> None:
    import orjson
    from agents.models.chatcmpl_converter import Converter

    records = [orjson.loads(line)["input"] for line in _first(src, n)]
    start = time.perf_counter()
    for items in records:
        try:
            Converter.items_to_messages(items)
        except Exception:
            continue
    print(f"{time.perf_counter() - start:.3f}")


def memory_chatlake(src: str, n: int) -> None:
    from pipeline.encoders import convert_table
    from pipeline.formats import decode_lines

    table = decode_lines(_first(src, n), "responses").table
    start = time.perf_counter()
    for offset in range(0, table.num_rows, 5000):  # the engine's batch size bounds memory
        convert_table(table.slice(offset, 5000), "chat", as_bytes=True)
    print(f"{time.perf_counter() - start:.3f}")


def io_alone(src: str, dst: str, files: list[str]) -> None:
    """The I/O of a converter alone: read the input once and write the bytes it writes (here:
    copies of chatlake's output files, new files in ``dst``), in 32 MiB blocks, nothing else. Not a
    floor where fresh pages cost more than recycled ones (the README's convert section)."""
    from pathlib import Path

    block = 32 << 20
    with open(src, "rb") as f:
        while f.read(block):
            pass
    for name in files:
        with open(name, "rb") as f, open(Path(dst) / Path(name).name, "xb") as out:
            while data := f.read(block):
                out.write(data)


if __name__ == "__main__":
    kind = sys.argv[1]
    if kind == "io-alone":
        io_alone(sys.argv[2], sys.argv[3], sys.argv[4:])
        sys.exit()
    if kind == "agents-jsonl":
        agents_jsonl(sys.argv[2], sys.argv[3])
    elif kind == "memory-agents":
        memory_agents(sys.argv[2], int(sys.argv[3]))
    else:
        memory_chatlake(sys.argv[2], int(sys.argv[3]))
