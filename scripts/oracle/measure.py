#!/usr/bin/env python3
"""The measured oracle for shmguard's vLLM row: every launch shape below is read by vLLM's own
`vllm serve` parser (FlexibleArgumentParser: abbreviations, dotted JSON flags, --kv-transfer-config),
then the shared-memory objects vLLM builds for it are built for real from the installed release
(MessageQueue/ShmRingBuffer for the executor's broadcast queue, each worker's response queue and
each group's broadcaster, the shm tensor arena, the multimodal cache's SingleWriterShmRingBuffer,
SharedOffloadRegion for CPU KV offload, ECSharedRegion for ECCPUConnector), inside a private tmpfs
mounted at /dev/shm in a mount namespace of its own. The bytes recorded are each file's st_size:
what vLLM checks with check_shm_free_space and later touches (the files stay sparse until then).

Run by scripts/oracle/run.sh (which makes the venv and the namespace); it writes JSON to stdout.
Which objects a shape has, and how many, follows vLLM 0.33.0's code, cited beside each rule.
"""
import gc
import json
import os
import sys

import vllm
from vllm.entrypoints.cli.serve import ServeSubcommand
from vllm.utils.argparse_utils import FlexibleArgumentParser

from oracle_common import clear_shm, shm_files, write_measurements

MiB = 1 << 20
# Regions are sized below the machine's memory: a SharedOffloadRegion pre-faults its pages as it
# is made, even where only its size is wanted.
GiB = 1 << 30

# (name, the words after `vllm serve`, the pod's GPUs). The container shmguard reads is
# {command: [vllm, serve, m, WORDS...]} with the same words.
SHAPES = [
    ("one GPU", [], 1),
    ("TP 2", ["-tp", "2"], 2),
    ("TP 4", ["-tp", "4"], 4),
    ("TP 8", ["-tp", "8"], 8),
    ("TP 8, abbreviated", ["--tensor-parallel", "8"], 8),
    ("TP 4, underscores", ["--tensor_parallel_size=4"], 4),
    ("PP 2", ["-pp", "2"], 2),
    ("PP 4", ["--pipeline-parallel-size", "4"], 4),
    ("TP 2 x PP 2", ["-tp", "2", "-pp", "2"], 4),
    ("TP 4 x PP 2", ["-tp", "4", "-pp", "2"], 8),
    ("DP 2", ["-dp", "2"], 2),
    ("DP 4", ["--data-parallel-size", "4"], 4),
    ("DP 8", ["-dp", "8"], 8),
    ("DP 2 x TP 2", ["-dp", "2", "-tp", "2"], 4),
    ("DP 2 x TP 4", ["-dp", "2", "-tp", "4"], 8),
    ("DP 4 x TP 2", ["-dp", "4", "-tp", "2"], 8),
    ("DP 8, 4 local", ["-dp", "8", "-dpl", "4"], 4),
    ("TP 2 x PCP 2", ["-tp", "2", "--prefill-context-parallel-size", "2"], 4),
    ("TP 4 x PCP 2", ["-tp", "4", "-pcp", "2"], 8),
    ("TP 4 x DCP 2", ["-tp", "4", "-dcp", "2"], 4),
    ("TP 8 x DCP 2", ["-tp", "8", "-dcp", "2"], 8),
    ("TP 8 x DCP 4", ["-tp", "8", "--decode-context-parallel-size", "4"], 8),
    ("TP 8 x DCP 8", ["-tp", "8", "-dcp", "8"], 8),
    ("TP 2, Ray executor", ["-tp", "2", "--distributed-executor-backend", "ray"], 2),
    ("TP 8, Ray executor", ["-tp", "8", "--distributed-executor-backend", "ray"], 8),
    ("DP 4 on Ray's DP backend", ["-dp", "4", "--data-parallel-backend", "ray"], 4),
    ("uni executor", ["--distributed-executor-backend", "uni"], 1),
    ("TP 2, external launcher", ["-tp", "2", "--distributed-executor-backend", "external_launcher"], 2),
    ("TP 2, tensor arena", ["-tp", "2", "--enable-shm-tensor-arena"], 2),
    ("TP 8, tensor arena", ["-tp", "8", "--enable-shm-tensor-arena"], 8),
    ("DP 2, tensor arena", ["-dp", "2", "--enable-shm-tensor-arena"], 2),
    ("TP 8, 100 MiB chunks", ["-tp", "8"], 8, {"VLLM_MQ_MAX_CHUNK_BYTES_MB": "100"}),
    ("TP 4, 256 MiB chunks", ["-tp", "4"], 4, {"VLLM_MQ_MAX_CHUNK_BYTES_MB": "256"}),
    ("TP 2, multimodal cache", ["-tp", "2", "--mm-processor-cache-type", "shm"], 2),
    ("multimodal cache 2.5 GiB", ["--mm-processor-cache-type=shm", "--mm-processor-cache-gb=2.5"], 1),
    ("DP 2, multimodal cache (processor only)", ["-dp", "2", "--mm-processor-cache-type", "shm"], 2),
    ("external-LB rank, multimodal cache",
     ["-dp", "4", "--data-parallel-rank", "0", "--mm-processor-cache-type", "shm"], 1),
    ("two API servers, multimodal cache", ["-tp", "2", "--api-server-count", "2", "--mm-processor-cache-type", "shm"], 2),
    ("multi-port external LB, 4 local", ["-dp", "8", "-dpl", "4", "--data-parallel-multi-port-external-lb",
                                         "--mm-processor-cache-type", "shm"], 4),
    ("multi-port external LB x TP 2", ["-dp", "4", "-dpl", "2", "-tp", "2", "--data-parallel-multi-port-external-lb",
                                       "--mm-processor-cache-type", "shm", "--mm-processor-cache-gb", "1"], 4),
    ("KV offload 6 GiB", ["--kv-offloading-size", "6"], 1),
    ("KV offload, TP 2", ["-tp", "2", "--kv-offloading-size", "8"], 2),
    ("KV offload, DP 2", ["-dp", "2", "--kv-offloading-size", "4"], 2),
    ("KV offload through LMCache", ["--kv-offloading-size", "6", "--kv-offloading-backend", "lmcache"], 1),
    ("KV offload, simple", ["--kv-offloading-size", "6"], 1, {"VLLM_USE_SIMPLE_KV_OFFLOAD": "1"}),
    ("OffloadingConnector in JSON",
     ["--kv-transfer-config", json.dumps({"kv_connector": "OffloadingConnector", "kv_role": "kv_both",
                                          "kv_connector_extra_config": {"cpu_bytes_to_use": 6 * GiB}})], 1),
    ("OffloadingConnector in JSON, TP 4",
     ["-tp", "4", "--kv-transfer-config", json.dumps({"kv_connector": "OffloadingConnector", "kv_role": "kv_both",
                                                      "kv_connector_extra_config": {"cpu_bytes_to_use": 8 * GiB}})], 4),
    ("OffloadingConnector, dotted",
     ["--kv-transfer-config.kv_connector", "OffloadingConnector", "--kv-transfer-config.kv_role", "kv_both",
      "--kv-transfer-config.kv_connector_extra_config.cpu_bytes_to_use", "5g"], 1),
    ("OffloadingConnector in a MultiConnector beside NIXL, DP 2",
     ["-dp", "2", "--kv-transfer-config", json.dumps({
         "kv_connector": "MultiConnector", "kv_role": "kv_both", "kv_connector_extra_config": {"connectors": [
             {"kv_connector": "NixlConnector", "kv_role": "kv_both"},
             {"kv_connector": "OffloadingConnector", "kv_role": "kv_both",
              "kv_connector_extra_config": {"cpu_bytes_to_use": 3 * GiB}}]}})], 2),
    ("TieringOffloadingSpec, TP 2",
     ["-tp", "2", "--kv-transfer-config", json.dumps({"kv_connector": "OffloadingConnector", "kv_role": "kv_both",
                                                      "kv_connector_extra_config": {"spec_name": "TieringOffloadingSpec",
                                                                                    "cpu_bytes_to_use": 4 * GiB}})], 2),
    ("NIXL alone", ["--kv-transfer-config", json.dumps({"kv_connector": "NixlConnector", "kv_role": "kv_both"})], 1),
    ("ECCPUConnector", ["--ec-transfer-config", json.dumps({"ec_connector": "ECCPUConnector", "ec_role": "ec_both",
                                                            "ec_connector_extra_config": {"ec_cpu_bytes": 256 * MiB}})], 1),
    ("ECCPUConnector, DP 2",
     ["-dp", "2", "--ec-transfer-config", json.dumps({"ec_connector": "ECCPUConnector", "ec_role": "ec_both",
                                                      "ec_connector_extra_config": {"ec_cpu_bytes": 128 * MiB}})], 2),
    ("multi-node leader: TP 8 x PP 2 over 2", ["-tp", "8", "-pp", "2", "--nnodes", "2"], 8),
    ("multi-node worker: TP 8 x PP 2, node 1",
     ["-tp", "8", "-pp", "2", "--nnodes", "2", "--node-rank", "1", "--headless"], 8),
    ("headless DP 4, 2 local", ["-dp", "4", "-dpl", "2", "--headless"], 2),
]

# Sizes the oracle gives the regions whose size depends on the model (KV bytes per block, the
# embedding size): the chunk divides every size above, so the region is the whole size asked for.
KV_CHUNK_BYTES = 2 * MiB
EC_BLOCK_BYTES = 8192


def parse(words, env):
    """The namespace vLLM's own parser gives `vllm serve m WORDS`."""
    for k, v in env.items():
        os.environ[k] = v
    parser = FlexibleArgumentParser()
    ServeSubcommand().subparser_init(parser.add_subparsers())
    args = parser.parse_args(["serve", "m", *words])
    return args


def as_dict(config):
    if config is None:
        return None
    if isinstance(config, dict):
        return config
    return {k: getattr(config, k) for k in ("kv_connector", "kv_connector_extra_config", "ec_connector",
                                             "ec_connector_extra_config") if hasattr(config, k)}


def offload_bytes(kv):
    """cpu_bytes_to_use of an OffloadingConnector, alone or in a MultiConnector
    (multi_connector.py:147-151, cpu/spec.py:99-105)."""
    if not kv:
        return 0
    if kv.get("kv_connector") == "OffloadingConnector":
        return int(kv["kv_connector_extra_config"]["cpu_bytes_to_use"])
    if kv.get("kv_connector") == "MultiConnector":
        return sum(offload_bytes(c) for c in kv["kv_connector_extra_config"].get("connectors", []))
    return 0


def objects(a, env):
    """The objects vLLM 0.33.0 builds in this pod for the parsed launch `a`, as
    (kind, parameters) pairs."""
    from vllm import envs
    tp, pp = a.tensor_parallel_size, a.pipeline_parallel_size
    pcp = getattr(a, "prefill_context_parallel_size", 1) or 1
    dcp = getattr(a, "decode_context_parallel_size", 1) or 1
    dp = a.data_parallel_size
    world = tp * pp * pcp  # parallel.py: world_size
    nnodes = a.nnodes or 1
    multi_port = a.data_parallel_multi_port_external_lb
    external = a.data_parallel_external_lb or a.data_parallel_rank is not None
    dp_local = 1 if external else (a.data_parallel_size_local or (dp if nnodes == 1 else max(1, dp * world // nnodes // world)))
    nodes_per_engine = max(1, nnodes // max(1, dp // dp_local)) if nnodes > 1 else 1
    if nodes_per_engine > 1:
        engines, ranks = 1, world // nodes_per_engine
    else:
        engines, ranks = dp_local, dp_local * world
    backend = a.distributed_executor_backend
    if backend is None:  # parallel.py:1054-1098
        backend = "uni" if world * dp == 1 else ("ray" if a.data_parallel_backend == "ray" else "mp")
    leader = nodes_per_engine == 1 or not a.headless or (a.node_rank or 0) % nodes_per_engine == 0
    out = []
    local = ranks // engines
    chunk = int(env.get("VLLM_MQ_MAX_CHUNK_BYTES_MB", "16")) * MiB
    if backend in ("mp", "ray") and leader:
        for _ in range(engines):  # multiproc_executor.py:161-185
            arena = a.enable_shm_tensor_arena and backend == "mp" and nodes_per_engine == 1
            out.append(("mq", dict(n_reader=world, n_local_reader=local, max_chunk_bytes=chunk, max_chunks=10,
                                   enable_shm_tensor_arena=arena)))
        for _ in range(ranks):
            if nodes_per_engine == 1 or backend == "ray":  # multiproc_executor.py:718-726
                out.append(("mq", dict(n_reader=1, n_local_reader=1)))
            else:  # create_single_reader_mq_broadcasters: 6 x 4 MiB, one reader
                out.append(("mq", dict(n_reader=1, n_local_reader=1, max_chunk_bytes=1 << 22, max_chunks=6)))
    for size in (tp, dcp):  # GroupCoordinator broadcasters (parallel_state.py:565-568)
        if size > 1:
            groups = ranks // size if ranks >= size else (1 if ranks >= 2 else 0)
            n = min(size, ranks)
            out += [("mq", dict(n_reader=n - 1, n_local_reader=n - 1, max_chunk_bytes=1 << 22, max_chunks=6))] * groups
    api = 0 if a.headless else (a.api_server_count if a.api_server_count is not None else
                                 (1 if external or multi_port else dp))
    ipc = api == 1 and (dp == 1 or external or multi_port)  # multimodal/cache/factories.py:36-45
    if a.mm_processor_cache_type == "shm" and ipc and a.mm_processor_cache_gb > 0:
        out += [("mm", int(a.mm_processor_cache_gb * GiB))] * (engines if multi_port else 1)
    kv = as_dict(a.kv_transfer_config)
    if a.kv_offloading_size is not None:  # config/vllm.py:1158-1175
        cpu = 0 if (a.kv_offloading_backend == "lmcache" or envs.VLLM_USE_SIMPLE_KV_OFFLOAD) else int(a.kv_offloading_size * GiB)
    else:
        cpu = offload_bytes(kv)
    if cpu:
        out += [("kv", cpu)] * engines
    ec = as_dict(a.ec_transfer_config)
    if ec and ec.get("ec_connector") == "ECCPUConnector":
        out += [("ec", int(ec["ec_connector_extra_config"]["ec_cpu_bytes"]))] * engines
    return out


def build(kind, p, i):
    """Builds one object vLLM builds, and returns it (kept alive until measured)."""
    if kind == "mq":
        from vllm.distributed.device_communicators.shm_broadcast import MessageQueue
        return MessageQueue(**p)
    if kind == "mm":
        from vllm.distributed.device_communicators.shm_object_storage import SingleWriterShmRingBuffer
        return SingleWriterShmRingBuffer(data_buffer_size=p, create=True)
    if kind == "kv":  # rank None: the scheduler's view of the same file, which pre-faults nothing
        from vllm.v1.kv_offload.cpu.shared_offload_region import SharedOffloadRegion
        return SharedOffloadRegion(engine_id="oracle%d" % i, num_chunks=p // KV_CHUNK_BYTES, rank=None,
                                   kv_bytes_per_chunk=KV_CHUNK_BYTES, cpu_page_size=KV_CHUNK_BYTES)
    if kind == "ec":
        from vllm.distributed.ec_transfer.ec_connector.cpu.ec_shared_region import ECSharedRegion
        return ECSharedRegion(engine_id="oracle%d" % i, num_blocks=p // EC_BLOCK_BYTES, block_size_bytes=EC_BLOCK_BYTES)
    raise ValueError(kind)


def measure(shape):
    name, words, gpus, *rest = shape
    env = rest[0] if rest else {}
    for k in ("VLLM_MQ_MAX_CHUNK_BYTES_MB", "VLLM_USE_SIMPLE_KV_OFFLOAD"):
        os.environ.pop(k, None)
    print("oracle: %s" % name, file=sys.stderr, flush=True)
    args = parse(words, env)
    wanted = objects(args, env)
    built = [build(kind, p, i) for i, (kind, p) in enumerate(wanted)]
    files = shm_files()
    kinds = sorted({k for k, _ in wanted})
    for obj in built:  # sparse files: the pages a worker would pre-fault are not needed to measure
        for close in ("cleanup", "close"):
            if hasattr(obj, close):
                try:
                    getattr(obj, close)()
                except Exception:  # noqa: BLE001 - the files are unlinked below either way
                    pass
                break
    del built
    gc.collect()
    clear_shm()
    return {"name": name, "args": words, "env": env, "gpus": gpus, "objects": kinds,
            "files": len(files), "bytes": sum(s for _, s in files),
            "sizes": [s for _, s in files]}


def main():
    write_measurements("vllm", vllm.__version__, sys.argv[1:], [measure(s) for s in SHAPES])


if __name__ == "__main__":
    main()
