"""torch SDPA on issue 6's prefix-prefill case, for the GPU machine (a measuring stick, not part of
attn-bench): 8 sequences, each with 2048 cached tokens and 512 new ones, 32 q heads over 8 KV heads,
head dim 128, bf16. The KV cache is given to torch already gathered into contiguous (B, H_kv, 2560,
D) tensors, and each new token i sees keys 0 .. 2048 + i: the same visible pairs as attn-bench's
preset prefix-prefill-llama3-8b-8x2048-512, so the FLOP counts agree.

Backends: flash and efficient with causal_lower_right (torch.nn.attention.bias), cuDNN and
efficient with the equivalent explicit boolean mask. GQA is expanded (repeat_interleave) outside
the timed region. Each measurement: triton.testing.do_bench median. One JSON line per backend;
a backend torch refuses prints its error instead.

  python3 scripts/prefix-prefill-sdpa.py   [SEQS=8 CTX=2048 NEW=512 env overrides]
"""
import json, os

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.nn.attention.bias import causal_lower_right
from triton.testing import do_bench

B = int(os.environ.get("SEQS", 8))
CTX = int(os.environ.get("CTX", 2048))
NEW = int(os.environ.get("NEW", 512))
HQ, HKV, D = 32, 8, 128
KEYS = CTX + NEW
torch.manual_seed(0)
q = torch.randn(B, HQ, NEW, D, dtype=torch.bfloat16, device="cuda")
k = torch.randn(B, HKV, KEYS, D, dtype=torch.bfloat16, device="cuda")
v = torch.randn_like(k)
k = k.repeat_interleave(HQ // HKV, dim=1)
v = v.repeat_interleave(HQ // HKV, dim=1)
bias = causal_lower_right(NEW, KEYS)
rows = torch.arange(NEW, device="cuda")[:, None]
cols = torch.arange(KEYS, device="cuda")[None, :]
mask = (cols <= rows + CTX).expand(B, 1, NEW, KEYS)
pairs = B * HQ * sum(CTX + i + 1 for i in range(NEW))
flops = 4 * D * pairs

reference = None
for name, backend, m in (("flash causal_lower_right", SDPBackend.FLASH_ATTENTION, bias),
                         ("efficient causal_lower_right", SDPBackend.EFFICIENT_ATTENTION, bias),
                         ("cudnn bool mask", SDPBackend.CUDNN_ATTENTION, mask),
                         ("efficient bool mask", SDPBackend.EFFICIENT_ATTENTION, mask)):
    row = {"peer": "torch_sdpa_prefix", "backend": name, "seqs": B, "ctx": CTX, "new": NEW,
           "gpu": torch.cuda.get_device_name(), "torch": torch.__version__}
    try:
        with sdpa_kernel([backend]):
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=m)
            if reference is None:
                reference = out.float()
            row["max_abs_diff_vs_first"] = float((out.float() - reference).abs().max())
            ms = do_bench(lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=m),
                          warmup=25, rep=200, return_mode="median")
        row.update(us=ms * 1e3, tflops=flops / ms / 1e9)
    except Exception as e:  # a backend that refuses this shape or mask: say so, go on
        row["error"] = repr(e)[:300]
    print(json.dumps(row), flush=True)
