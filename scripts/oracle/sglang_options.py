#!/usr/bin/env python3
"""Writes src/core/servers/sglang_options.cc: every option string of SGLang's own server parser
(prepare_server_args: argparse with allow_abbrev), as the installed SGLang defines it, so that
shmguard spells out an abbreviated flag the way argparse does, and refuses one that abbreviates
several ("--pp"). Run with the oracle's venv (scripts/oracle/run.sh); docs/testing.md says when.

    "$venv/bin/python" scripts/oracle/sglang_options.py > src/core/servers/sglang_options.cc
"""
import argparse

import sglang
from sglang.srt.server_args import ServerArgs

from oracle_common import write_options


def main() -> None:
    parser = argparse.ArgumentParser(prog="sglang serve")  # as prepare_server_args makes it
    ServerArgs.add_cli_args(parser)
    write_options("sglang_options.py", "SGLang", sglang.__version__,
                  "server parser takes (sglang/srt/server_args.py, prepare_server_args)",
                  "core/servers/internal/sglang_options.h", "Sglang", [o for action in parser._actions for o in action.option_strings])


if __name__ == "__main__":
    main()
