#!/usr/bin/env python3
"""The measured oracle for shmguard's SGLang row: every launch shape below is read by SGLang's own
parser (prepare_server_args: argparse with its abbreviations, a --config file merged first), the
deprecated `--dp-size N --enable-dp-attention` resolved by its own hook, and its own
initialize_model_parallel is run for the ranks of one pod, with torch.distributed stood in by a
recorder, to learn which groups it builds with a message-queue broadcaster. Each such group whose
writer runs in the pod then gets the broadcaster SGLang makes, built for real from the installed
release (GroupCoordinator: MessageQueue.create_from_process_group(cpu_group, 1 << 22, 6), whose
writer builds MessageQueue(n_reader, n_local_reader, ...)), inside a private tmpfs mounted at
/dev/shm in a mount namespace of its own. The bytes recorded are each file's st_size.

Run by scripts/oracle/run.sh (which makes the venv and the namespace); it writes JSON to stdout.
"""
import os
import sys
import tempfile
import types

import sglang
import torch.distributed
from sglang.srt.arg_groups.overrides import resolving_view
from sglang.srt.arg_groups.parallel_hook import handle_deprecated_dp_attention
from sglang.srt.arg_groups.resolution_hooks import run_hook
from sglang.srt.distributed import parallel_state
from sglang.srt.distributed.device_communicators.shm_broadcast import MessageQueue
from sglang.srt.server_args import prepare_server_args

from oracle_common import clear_shm, shm_files, write_measurements

# (name, the words after `python3 -m sglang.launch_server --model-path m`, the pod's GPUs, and
# optionally the environment and a --config file's text, mounted at /etc/sglang/config.yaml).
SHAPES = [
    ("one GPU", [], 1),
    ("TP 2", ["--tp-size", "2"], 2),
    ("TP 4", ["--tp", "4"], 4),
    ("TP 8", ["--tensor-parallel-size", "8"], 8),
    ("TP 8, abbreviated", ["--tensor-parallel", "8"], 8),
    ("PP 2", ["--pp-size", "2"], 2),
    ("TP 2 x PP 2", ["--tp", "2", "--pp-size", "2"], 4),
    ("TP 4 x PP 2", ["--tp", "4", "--pp-size", "2"], 8),
    ("DP 2", ["--dp-size", "2"], 2),
    ("DP 2 x TP 2", ["--dp", "2", "--tp", "2"], 4),
    ("DP 2 x TP 4", ["--dp-size", "2", "--tp-size", "4"], 8),
    ("TP 8, attention DP 2", ["--tp", "8", "--attn-dp-size", "2"], 8),
    ("TP 8, attention DP 8", ["--tp", "8", "--attn-dp-size", "8"], 8),
    ("TP 8, deprecated DP attention 4", ["--tp", "8", "--dp-size", "4", "--enable-dp-attention"], 8),
    ("TP 4, attention CP 2", ["--tp", "4", "--attn-cp-size", "2"], 4),
    ("TP 8, attention CP 2 x attention DP 2", ["--tp", "8", "--attn-cp-size", "2", "--attn-dp-size", "2"], 8),
    ("TP 8, attention CP 8", ["--tp", "8", "--attn-cp-size", "8"], 8),
    ("TP 4, DCP 2", ["--tp", "4", "--dcp-size", "2"], 4),
    ("TP 8, DCP 4", ["--tp", "8", "--decode-context-parallel-size", "4"], 8),
    ("TP 8, DCP 8", ["--tp", "8", "--dcp-size", "8"], 8),
    ("TP 4, PD multiplexing", ["--tp", "4", "--enable-pdmux"], 4),
    ("TP 8, no broadcaster", ["--tp", "8"], 8, {"SGLANG_USE_MESSAGE_QUEUE_BROADCASTER": "false"}),
    ("TP 4, broadcaster FALSE", ["--tp", "4"], 4, {"SGLANG_USE_MESSAGE_QUEUE_BROADCASTER": "FALSE"}),
    ("TP 4, broadcaster yes", ["--tp", "4"], 4, {"SGLANG_USE_MESSAGE_QUEUE_BROADCASTER": "yes"}),
    ("TP 16 over 2 nodes, node 0", ["--tp", "16", "--nnodes", "2", "--node-rank", "0"], 8),
    ("TP 16 over 2 nodes, node 1", ["--tp", "16", "--nnodes", "2", "--node-rank", "1"], 8),
    ("TP 8 x PP 2 over 2 nodes", ["--tp", "8", "--pp-size", "2", "--nnodes", "2"], 8),
    ("TP 8 x PP 2 over 2 nodes, node 1", ["--tp", "8", "--pp-size", "2", "--nnodes", "2", "--node-rank", "1"], 8),
    ("TP 2 over 2 nodes of 1 GPU, node 0", ["--tp", "2", "--nnodes", "2"], 1),
    ("TP 8, attention CP 2 over 2 nodes, node 1",
     ["--tp", "8", "--attn-cp-size", "2", "--nnodes", "2", "--node-rank", "1"], 4),
    ("TP 8, DCP 2 over 2 nodes, node 1", ["--tp", "8", "--dcp-size", "2", "--nnodes", "2", "--node-rank", "1"], 4),
    ("TP 4 from a --config file", ["--config", "/etc/sglang/config.yaml"], 4, {}, "tp-size: 4\n"),
    ("--config, the command line wins", ["--config", "/etc/sglang/config.yaml", "--tp", "2"], 2, {},
     "tp-size: 8\nenable-pdmux: true\n"),
]

CHUNK_BYTES, CHUNKS = 1 << 22, 6  # GroupCoordinator's broadcaster (parallel_state.py:563-567)


class Group:
    """What initialize_model_parallel gets back from init_model_parallel_group: a record."""

    def __init__(self, group_ranks, use_message_queue_broadcaster=False, group_name=None, **_):
        self.group_ranks = group_ranks
        self.broadcaster = use_message_queue_broadcaster
        self.name = group_name
        self.rank_in_group = 0
        self.pynccl_comm = None

    def destroy(self):
        pass


class Parallel(types.SimpleNamespace):
    """The parallel context initialize_model_parallel reads its widths from."""

    def override_permanently(self, **_):
        pass


def groups_of(cfg, world):
    """The groups SGLang's own initialize_model_parallel builds for one replica of `world` ranks."""
    built = []

    def record(group_ranks, local_rank, backend, **kw):
        g = Group(group_ranks, **kw)
        built.append(g)
        return g

    saved = {}
    fakes = {
        (parallel_state, "init_model_parallel_group"): record,
        (parallel_state, "get_parallel"): lambda: Parallel(
            tp_size=cfg.tp_size, moe_ep_size=cfg.ep_size, pp_size=cfg.pp_size, attn_dp_size=cfg.attn_dp_size,
            attn_cp_size=cfg.attn_cp_size, moe_dp_size=cfg.moe_dp_size, attn_dcp_size=cfg.dcp_size,
            shared_experts_tp_size=None),
        (parallel_state, "get_world_group"): lambda: types.SimpleNamespace(local_rank=0, device_group=None),
        (parallel_state, "is_cuda"): lambda: True,  # DCP is refused off the GPU platforms (:2654-2663)
        (torch.distributed, "is_initialized"): lambda: True,
        (torch.distributed, "get_world_size"): lambda *a, **k: world,
        (torch.distributed, "get_backend"): lambda *a, **k: "gloo",
    }
    for (module, name), fake in fakes.items():
        saved[(module, name)] = getattr(module, name)
        setattr(module, name, fake)
    try:
        parallel_state.initialize_model_parallel(backend="gloo", duplicate_tp_group=bool(cfg.enable_pdmux))
    finally:
        for (module, name), real in saved.items():
            setattr(module, name, real)
        for name in dir(parallel_state):
            if isinstance(getattr(parallel_state, name), Group):
                setattr(parallel_state, name, None)
    return built


def parse(words, env, config_text):
    for k in ("SGLANG_USE_MESSAGE_QUEUE_BROADCASTER",):
        os.environ.pop(k, None)
    os.environ.update(env)
    if config_text is not None:
        path = os.path.join(tempfile.mkdtemp(), "config.yaml")
        with open(path, "w") as f:
            f.write(config_text)
        words = [path if w == "/etc/sglang/config.yaml" else w for w in words]
    args = prepare_server_args(["--model-path", "m", *words])
    args._resolved_overrides = []
    run_hook(handle_deprecated_dp_attention, args)
    return resolving_view(args)


def measure(shape):
    name, words, gpus, *rest = shape
    env = rest[0] if rest else {}
    config_text = rest[1] if len(rest) > 1 else None
    print("oracle: %s" % name, file=sys.stderr, flush=True)
    cfg = parse(words, env, config_text)
    world = cfg.tp_size * cfg.pp_size  # one replica (initialize_model_parallel :2644-2651)
    replicas = cfg.dp_size  # --dp-size without attention DP: that many replicas, each a world
    nnodes = cfg.nnodes or 1
    ranks = world * replicas
    local = ranks // nnodes if nnodes > 1 else ranks  # the ranks this pod runs
    first = (cfg.node_rank or 0) * local
    pod = set(range(first, first + local))
    queues = []
    for replica in range(replicas):
        base = replica * world
        for g in groups_of(cfg, world):
            if not g.broadcaster:
                continue
            for group in g.group_ranks:
                group = [base + r for r in group]
                if len(group) < 2 or group[0] not in pod:  # GroupCoordinator: world_size > 1; the writer makes it
                    continue
                n_local = len([r for r in group if r in pod]) - 1
                queues.append((g.name, dict(n_reader=len(group) - 1, n_local_reader=n_local,
                                            local_reader_ranks=list(range(1, n_local + 1)),
                                            max_chunk_bytes=CHUNK_BYTES, max_chunks=CHUNKS)))
    built = [MessageQueue(**p) for _, p in queues]
    files = shm_files()
    for q in built:
        try:
            q.shutdown() if hasattr(q, "shutdown") else None
        except Exception:  # noqa: BLE001 - the files are unlinked below either way
            pass
    del built
    clear_shm()
    row = {"name": name, "args": words, "env": env, "gpus": gpus, "groups": sorted({n for n, _ in queues}),
           "files": len(files), "bytes": sum(s for _, s in files), "sizes": [s for _, s in files]}
    if config_text is not None:
        row["config"] = config_text
    return row


def main():
    write_measurements("sglang", sglang.__version__, sys.argv[1:], [measure(s) for s in SHAPES])


if __name__ == "__main__":
    main()
