#!/usr/bin/env python3
"""Reference outputs of PyTorch's own torch.nn.TransformerEncoderLayer for
tests/models/bert_layer_equivalence_test.cpp.

Usage: .venv/bin/python tests/models/transformer_reference.py OUTDIR

Writes OUTDIR/encoder_layer_post_ln.pt and OUTDIR/encoder_layer_pre_ln.pt, one per norm_first
value, each a plain dict (torch.save, zip format) of float32 tensors:

  "state.<name>"      the layer's state_dict (self_attn.in_proj_weight, ..., norm2.bias)
  "input"             [B, T, d_model]
  "padding_mask"      bool [B, T], True at padding (key padding mask)
  "output_fastpath"   eval mode under no_grad: PyTorch 1.13 takes its fused "fast path"
                      (torch._transformer_encoder_layer_fwd) here
  "output_reference"  train mode with dropout 0 and gradients enabled: the plain Python path
                      (F.multi_head_attention_forward, norm1/norm2, linear1/linear2), which the
                      fast path is meant to equal; deterministic because every dropout is 0

A plain dict rather than the state_dict's OrderedDict: LibTorch 1.13's torch::pickle_load cannot
read an OrderedDict (see models/state_dict_pickle.h).

Every parameter, LayerNorm scales and biases included, is drawn at random (fixed seed), so a
weight mapped to the wrong place on the C++ side cannot go unnoticed.
"""
import os
import sys

import torch

D_MODEL, NHEAD, DIM_FF = 64, 4, 256  # nhead even: PyTorch 1.13 skips the fast path for odd heads
BATCH, SEQ = 3, 9
PADDED = [0, 3, 5]  # trailing padded positions per sequence (the first one has none)


def make_case(norm_first: bool) -> dict:
    torch.manual_seed(1234 + int(norm_first))
    layer = torch.nn.TransformerEncoderLayer(
        D_MODEL, NHEAD, dim_feedforward=DIM_FF, dropout=0.0, activation="gelu",
        batch_first=True, layer_norm_eps=1e-12, norm_first=norm_first)
    with torch.no_grad():
        for name, p in layer.named_parameters():
            if name.startswith("norm"):
                p.copy_((1.0 if name.endswith("weight") else 0.0) + 0.2 * torch.randn_like(p))
            elif name.endswith("bias"):
                p.copy_(0.1 * torch.randn_like(p))
    x = torch.randn(BATCH, SEQ, D_MODEL)
    mask = torch.zeros(BATCH, SEQ, dtype=torch.bool)
    for b, n in enumerate(PADDED):
        if n:
            mask[b, SEQ - n:] = True

    layer.eval()
    with torch.no_grad():
        fast = layer(x, src_key_padding_mask=mask)
    layer.train()  # dropout is 0: only the code path changes
    reference = layer(x, src_key_padding_mask=mask).detach()

    out = {"state." + k: v.detach().clone() for k, v in layer.state_dict().items()}
    out.update({"input": x, "padding_mask": mask, "output_fastpath": fast,
                "output_reference": reference})
    return out


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    torch.set_num_threads(1)
    for norm_first, suffix in ((False, "post"), (True, "pre")):
        name = f"encoder_layer_{suffix}_ln.pt"
        torch.save(make_case(norm_first), os.path.join(outdir, name))
    print(f"torch {torch.__version__}: wrote {outdir}/encoder_layer_{{post,pre}}_ln.pt")
    return 0


if __name__ == "__main__":
    sys.exit(main())
