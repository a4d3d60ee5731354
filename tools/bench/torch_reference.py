#!/usr/bin/env python3
"""PyTorch reference for ember's GPU step, for the ratio a user asks about.

The same step as gpu_train_bench (op none, dot, softmax, one relation): a batch
of edges in chunks of --chunk; per chunk and side (corrupt destination, then
source) the candidates are the chunk's own endpoints (in-batch), the chunk's
true endpoints and --negs uniform negatives, so cand = 2*chunk + negs as in
the benchmark's GEMM shapes; scores = src_rows @ cand_rowsᵀ (one batched
GEMM), softmax cross-entropy with the true endpoint as the label, the two
gradient products, then row-wise Adagrad (one state float per row: the mean
squared gradient) on the touched rows. Prints edges/s and, given --ember
EDGES_PER_S, the ratio ember / PyTorch.

  python3 tools/bench/torch_reference.py --device cuda --ember 3.1e7
  python3 tools/bench/torch_reference.py --device cpu --nodes 100000 --seconds 2
"""
import argparse
import sys
import time


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cuda")
    p.add_argument("--nodes", type=int, default=1 << 24)
    p.add_argument("--dim", type=int, default=100)
    p.add_argument("--batch", type=int, default=1000)
    p.add_argument("--chunk", type=int, default=50)
    p.add_argument("--negs", type=int, default=50)
    p.add_argument("--lr", type=float, default=0.1)
    p.add_argument("--seconds", type=float, default=20.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--ember", type=float, default=0.0, help="ember's edges/s, for the ratio")
    a = p.parse_args()
    try:
        import torch
    except ImportError:
        print("torch_reference: PyTorch is not installed", file=sys.stderr)
        return 2
    if a.device.startswith("cuda") and not torch.cuda.is_available():
        print("torch_reference: no CUDA device for PyTorch", file=sys.stderr)
        return 3
    dev = torch.device(a.device)
    g = torch.Generator(device=dev).manual_seed(a.seed)
    rows = (torch.rand(a.nodes, a.dim, device=dev, generator=g) - 0.5) * 1e-3
    state = torch.zeros(a.nodes, device=dev)
    assert a.batch % a.chunk == 0, "--batch must be a multiple of --chunk"
    chunks = a.batch // a.chunk

    def sync():
        if dev.type == "cuda":
            torch.cuda.synchronize(dev)

    def step():
        src = torch.randint(0, a.nodes, (chunks, a.chunk), device=dev, generator=g)
        dst = torch.randint(0, a.nodes, (chunks, a.chunk), device=dev, generator=g)
        loss_sum = 0.0
        for anchor, target in ((src, dst), (dst, src)):  # corrupt dst, then src
            negs = torch.randint(0, a.nodes, (chunks, a.negs), device=dev, generator=g)
            cand_ids = torch.cat([target, anchor, negs], dim=1)  # (chunks, cand)
            x = rows[anchor].requires_grad_(True)                # (chunks, chunk, dim)
            c = rows[cand_ids].requires_grad_(True)              # (chunks, cand, dim)
            scores = torch.bmm(x, c.transpose(1, 2))             # (chunks, chunk, cand)
            label = torch.arange(a.chunk, device=dev).expand(chunks, a.chunk)
            loss = torch.nn.functional.cross_entropy(
                scores.reshape(-1, scores.shape[-1]), label.reshape(-1), reduction="sum")
            gx, gc = torch.autograd.grad(loss, (x, c))           # the two gradient products
            ids = torch.cat([anchor.reshape(-1), cand_ids.reshape(-1)])
            grads = torch.cat([gx.reshape(-1, a.dim), gc.reshape(-1, a.dim)])
            uniq, inv = torch.unique(ids, return_inverse=True)
            gsum = torch.zeros(uniq.numel(), a.dim, device=dev).index_add_(0, inv, grads)
            state[uniq] += gsum.pow(2).mean(dim=1)             # row-wise Adagrad
            rows[uniq] -= a.lr * gsum / (state[uniq].sqrt() + 1e-9).unsqueeze(1)
            loss_sum += loss.detach()
        return loss_sum

    for _ in range(3):
        step()  # warm-up: kernels chosen, memory pooled
    sync()
    if dev.type == "cuda":
        torch.cuda.reset_peak_memory_stats(dev)
    steps, t0 = 0, time.perf_counter()
    while True:
        loss = step()
        steps += 1
        if steps % 20 == 0:
            sync()
            if time.perf_counter() - t0 >= a.seconds:
                break
    sync()
    dt = time.perf_counter() - t0
    eps = steps * a.batch / dt
    peak = torch.cuda.max_memory_allocated(dev) / 2**30 if dev.type == "cuda" else 0.0
    print(f"torch_reference: {torch.__version__} on {a.device}"
          f"{' (' + torch.cuda.get_device_name(dev) + ')' if dev.type == 'cuda' else ''}: "
          f"{eps:.4g} edges/s ({steps} steps of {a.batch} in {dt:.1f} s; nodes {a.nodes}, "
          f"dim {a.dim}, chunk {a.chunk}, negs {a.negs}; last loss/edge "
          f"{float(loss) / (2 * a.batch):.4f}; peak {peak:.2f} GiB)")
    if a.ember > 0:
        print(f"ember / PyTorch: {a.ember:.4g} / {eps:.4g} = {a.ember / eps:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
