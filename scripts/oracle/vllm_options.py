#!/usr/bin/env python3
"""Writes src/core/servers/vllm_options.cc: every option string of `vllm serve`'s own parser, as
the installed vLLM defines it, so that shmguard spells out an abbreviated flag the way argparse
does (vLLM's FlexibleArgumentParser keeps allow_abbrev). Run with the oracle's venv
(scripts/oracle/setup.sh); docs/testing.md says when.

    VLLM_TARGET_DEVICE=cpu "$venv/bin/python" scripts/oracle/vllm_options.py > src/core/servers/vllm_options.cc
"""
import vllm
from vllm.entrypoints.cli.serve import ServeSubcommand
from vllm.utils.argparse_utils import FlexibleArgumentParser

from oracle_common import write_options


def main() -> None:
    parser = FlexibleArgumentParser()
    serve = ServeSubcommand().subparser_init(parser.add_subparsers())
    write_options("vllm_options.py", "vLLM", vllm.__version__,
                  "`vllm serve` parser takes (vllm/entrypoints/cli/serve.py, vllm/engine/arg_utils.py)",
                  "core/servers/internal/vllm_words.h", "Vllm", [o for action in serve._actions for o in action.option_strings])


if __name__ == "__main__":
    main()
