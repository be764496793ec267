#!/usr/bin/env python3
"""Python peers of tests/cli/export_cli_test.cpp and tests/cli/hf_interchange_test.cpp: weights
into batchlab (model.init_from) and back out of it (batchlab export), checked by the libraries
researchers use: PyTorch, torchvision, timm, safetensors and Hugging Face transformers (the
versions pinned in scripts/python/requirements.txt).

Runs under the project virtualenv's Python (.venv/bin/python: the torch whose LibTorch batchlab
links), one thread, fixed seeds, HF_HUB_OFFLINE=1 (nothing is downloaded: every model is built
from a config with random weights).

    save-resnet18 STATE IO          torchvision resnet18(weights=None), two train-mode forwards
                                    (BN statistics not trivial), torch.save(state_dict, STATE);
                                    IO = {"input", "logits"} (eval mode), torch.save
    check-resnet18 EXPORTED IO      torch.load(EXPORTED) into a fresh resnet18, strict; logits
                                    must equal IO's (torch.equal)
    save-resnet50 LIB STATE IO      the same for LIB's ResNet-50 (torchvision or timm), saved with
                                    safetensors.torch.save_file
    check-resnet50 LIB EXPORTED IO  safetensors.torch.load_file(EXPORTED) into a fresh LIB
                                    ResNet-50, strict; logits torch.equal
    save-bert DIR IO VOCAB MAX_POS  transformers.BertForMaskedLM(BertConfig(bert_tiny sizes)),
                                    every parameter random, save_pretrained(DIR); IO = {"input_ids"
                                    [2, 16], "logits" [2, 16, VOCAB]}
    check-bert DIR IO               BertForMaskedLM.from_pretrained(DIR): no missing, unexpected or
                                    mis-shaped key, logits torch.equal; BertForSequenceClassification
                                    .from_pretrained(DIR): only the new head missing (classifier,
                                    and the pooler, which BertForMaskedLM has not), only the MLM head
                                    unexpected; AutoTokenizer.from_pretrained(DIR) loads, with
                                    batchlab's special ids
    compare-logits DIR FILE TOL [CLASS]
                                    FILE (safetensors: input_ids [B, T], logits [B, T, V] computed
                                    by batchlab): CLASS.from_pretrained(DIR) (BertForMaskedLM, or
                                    GPT2LMHeadModel) on the same ids gives logits within TOL (max
                                    abs difference), loading with no missing or unexpected key
    save-gpt2 DIR IO VOCAB MAX_POS  transformers.GPT2LMHeadModel(GPT2Config(gpt2_tiny sizes)), every
                                    parameter random, save_pretrained(DIR); IO (safetensors) =
                                    {"input_ids" [2, 16], "logits" [2, 16, VOCAB]}
    check-gpt2 DIR IO               GPT2LMHeadModel.from_pretrained(DIR): no missing, unexpected or
                                    mis-shaped key, lm_head tied to wte, logits torch.equal to IO's;
                                    AutoTokenizer.from_pretrained(DIR) loads, with batchlab's ids
    check-gpt2-state FILE VOCAB MAX_POS
                                    load_state_dict(safetensors.torch.load_file(FILE), strict=True)
                                    into a GPT2LMHeadModel of gpt2_tiny sizes
    encode DIR LINES OUT            AutoTokenizer.from_pretrained(DIR) encodes each line of the
                                    JSON list LINES without special tokens; OUT = the JSON lists
    save-dtypes FILE                safetensors.torch.save_file of arange(12)/4 as [3, 4] in F32,
                                    F16 and BF16 (exact in each) and an I64 counter
    save-list FILE                  torch.save([tensor, tensor], FILE): not a dict
    save-torchscript FILE           torch.jit.save of a scripted Linear

Exit 0 and a line "OK ..." when a check holds, 1 when it does not, 3 when a library cannot be
imported.
"""
import json
import os
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

try:
    import safetensors.torch
    import timm
    import torch
    import torchvision
    import transformers
    from torch import nn
except ImportError as e:  # the C++ test turns this into a failure with a setup hint
    print(f"cannot import the Python peers' libraries in {sys.executable}: {e}; "
          "run bash scripts/setup.sh", file=sys.stderr)
    sys.exit(3)

BERT_TINY = dict(hidden_size=128, num_hidden_layers=2, num_attention_heads=2,
                 intermediate_size=512, type_vocab_size=2, layer_norm_eps=1e-12,
                 hidden_act="gelu", pad_token_id=0)


GPT2_TINY = dict(n_embd=128, n_layer=2, n_head=2, activation_function="gelu_new",
                 layer_norm_epsilon=1e-5, bos_token_id=3, eos_token_id=3, pad_token_id=0)


def resnet(lib, depth):
    if lib == "torchvision":
        return getattr(torchvision.models, f"resnet{depth}")(weights=None)
    if lib == "timm":
        return timm.create_model(f"resnet{depth}", pretrained=False)
    raise SystemExit(f"unknown library {lib}")


def save_resnet(lib, depth, state_path, io_path, save):
    torch.manual_seed(0)
    model = resnet(lib, depth)
    model.train()
    with torch.no_grad():
        for _ in range(2):
            model(torch.randn(4, 3, 32, 32))
    model.eval()
    x = torch.randn(2, 3, 32, 32)
    with torch.no_grad():
        logits = model(x)
    save(model.state_dict(), state_path)
    torch.save({"input": x, "logits": logits}, io_path)
    print(f"saved {lib} resnet{depth}: {len(model.state_dict())} entries")
    return 0


def check_logits(model, state, io_path, input_key, label):
    model.load_state_dict(state, strict=True)  # raises on any missing/unexpected/mis-shaped key
    model.eval()
    io = torch.load(io_path)
    with torch.no_grad():
        out = model(io[input_key])
    logits = out.logits if hasattr(out, "logits") else out
    if not torch.equal(logits, io["logits"]):
        diff = (logits - io["logits"]).abs().max().item()
        print(f"{label}: logits differ from the original model's (max abs diff {diff:.3e})",
              file=sys.stderr)
        return 1
    print(f"OK {label}: {len(state)} entries loaded strictly, logits identical")
    return 0


def bert_config(vocab, max_pos):
    return transformers.BertConfig(vocab_size=vocab, max_position_embeddings=max_pos, **BERT_TINY)


def save_randomized(model, is_norm_or_bias, directory, vocab):
    """Perturbs the LayerNorms and biases of a freshly built `model`, saves it with
    save_pretrained and returns (ids [2, 16], its logits on them) for the check-* commands."""
    with torch.no_grad():  # LayerNorms and biases random too: a misplaced tensor cannot hide
        for name, p in model.named_parameters():
            if is_norm_or_bias(name):
                p.add_(0.1 * torch.randn_like(p))
    model.eval()
    ids = torch.randint(5, vocab, (2, 16))
    with torch.no_grad():
        logits = model(input_ids=ids).logits
    model.save_pretrained(directory)
    return ids, logits


def save_bert(directory, io_path, vocab, max_pos):
    torch.manual_seed(1)
    model = transformers.BertForMaskedLM(bert_config(vocab, max_pos))
    ids, logits = save_randomized(
        model, lambda name: "LayerNorm" in name or name.endswith("bias"), directory, vocab)
    torch.save({"input_ids": ids, "logits": logits}, io_path)
    print(f"saved BertForMaskedLM to {directory}: {len(model.state_dict())} entries")
    return 0


def loading_problems(info):
    return {k: sorted(v) for k, v in info.items() if k != "error_msgs" and v}


def loaded_cleanly(model_class, directory):
    """model_class.from_pretrained(directory), or None (with the loading info printed) when a key
    was missing, unexpected or mismatched, or the load reported an error."""
    model, info = model_class.from_pretrained(directory, output_loading_info=True)
    if loading_problems(info) or info["error_msgs"]:
        print(f"{model_class.__name__}.from_pretrained({directory}): {info}", file=sys.stderr)
        return None
    return model


def logits_identical(model, io, label):
    """Whether `model` in eval mode gives exactly io["logits"] on io["input_ids"] (the difference
    printed when not)."""
    model.eval()
    with torch.no_grad():
        logits = model(input_ids=io["input_ids"]).logits
    if not torch.equal(logits, io["logits"]):
        diff = (logits - io["logits"]).abs().max().item()
        print(f"{label} logits differ (max abs diff {diff:.3e})", file=sys.stderr)
        return False
    return True


def check_bert(directory, io_path):
    model = loaded_cleanly(transformers.BertForMaskedLM, directory)
    if model is None or not logits_identical(model, torch.load(io_path), "BertForMaskedLM"):
        return 1
    _, info = transformers.BertForSequenceClassification.from_pretrained(
        directory, num_labels=2, output_loading_info=True)
    missing = sorted(info["missing_keys"])
    unexpected = sorted(info["unexpected_keys"])
    new_head = ["bert.pooler.dense.bias", "bert.pooler.dense.weight", "classifier.bias",
                "classifier.weight"]
    if missing != new_head or any(not k.startswith("cls.predictions.") for k in unexpected) \
            or info["mismatched_keys"]:
        print(f"BertForSequenceClassification.from_pretrained({directory}): missing {missing}, "
              f"unexpected {unexpected}, mismatched {info['mismatched_keys']}", file=sys.stderr)
        return 1
    tok = transformers.AutoTokenizer.from_pretrained(directory)
    ids = [tok.pad_token_id, tok.unk_token_id, tok.cls_token_id, tok.sep_token_id,
           tok.mask_token_id]
    if ids != [0, 1, 2, 3, 4] or len(tok) != model.config.vocab_size:
        print(f"AutoTokenizer: special ids {ids}, {len(tok)} tokens", file=sys.stderr)
        return 1
    print(f"OK bert: BertForMaskedLM loaded with no missing or unexpected key, logits identical; "
          f"BertForSequenceClassification new: {', '.join(missing)}; unexpected: "
          f"{', '.join(unexpected)}; AutoTokenizer {type(tok).__name__}, {len(tok)} tokens")
    return 0


def gpt2_config(vocab, max_pos):
    return transformers.GPT2Config(vocab_size=vocab, n_positions=max_pos, **GPT2_TINY)


def save_gpt2(directory, io_path, vocab, max_pos):
    torch.manual_seed(2)
    model = transformers.GPT2LMHeadModel(gpt2_config(vocab, max_pos))
    ids, logits = save_randomized(
        model, lambda name: ".ln_" in name or name.endswith("bias"), directory, vocab)
    safetensors.torch.save_file({"input_ids": ids, "logits": logits.contiguous()}, io_path)
    print(f"saved GPT2LMHeadModel to {directory}: {len(model.state_dict())} entries")
    return 0


def check_gpt2(directory, io_path):
    model = loaded_cleanly(transformers.GPT2LMHeadModel, directory)
    if model is None:
        return 1
    if model.lm_head.weight.data_ptr() != model.transformer.wte.weight.data_ptr():
        print("GPT2LMHeadModel: lm_head.weight is not tied to transformer.wte.weight",
              file=sys.stderr)
        return 1
    if not logits_identical(model, safetensors.torch.load_file(io_path), "GPT2LMHeadModel"):
        return 1
    tok = transformers.AutoTokenizer.from_pretrained(directory)
    ids = [tok.pad_token_id, tok.unk_token_id, tok.sep_token_id]
    if ids != [0, 1, 3] or len(tok) != model.config.vocab_size:
        print(f"AutoTokenizer: pad/unk/sep ids {ids}, {len(tok)} tokens", file=sys.stderr)
        return 1
    print(f"OK gpt2: GPT2LMHeadModel loaded with no missing or unexpected key, lm_head tied, "
          f"logits identical; AutoTokenizer {type(tok).__name__}, {len(tok)} tokens")
    return 0


def check_gpt2_state(path, vocab, max_pos):
    model = transformers.GPT2LMHeadModel(gpt2_config(vocab, max_pos))
    state = safetensors.torch.load_file(path)
    model.load_state_dict(state, strict=True)  # raises on any missing/unexpected/mis-shaped key
    print(f"OK gpt2 state: {len(state)} entries loaded strictly into GPT2LMHeadModel")
    return 0


def compare_logits(directory, path, tolerance, model_class="BertForMaskedLM"):
    saved = safetensors.torch.load_file(path)
    model, info = getattr(transformers, model_class).from_pretrained(directory,
                                                                     output_loading_info=True)
    if loading_problems(info) or info["error_msgs"]:
        print(f"{model_class}.from_pretrained({directory}): {info}", file=sys.stderr)
        return 1
    model.eval()
    with torch.no_grad():
        logits = model(input_ids=saved["input_ids"]).logits
    diff = (logits - saved["logits"]).abs().max().item()
    scale = saved["logits"].abs().max().item()
    if not diff <= tolerance:
        print(f"transformers and batchlab logits differ by {diff:.3e} (> {tolerance}; largest "
              f"logit {scale:.3f})", file=sys.stderr)
        return 1
    print(f"OK logits: transformers and batchlab agree within {diff:.3e} (tolerance {tolerance}, "
          f"largest logit {scale:.3f}, {logits.numel()} values)")
    return 0


def encode(directory, lines_path, out_path):
    tok = transformers.AutoTokenizer.from_pretrained(directory)
    with open(lines_path, encoding="utf-8") as f:
        lines = json.load(f)
    ids = [tok(line, add_special_tokens=False)["input_ids"] for line in lines]
    with open(out_path, "w") as f:
        json.dump(ids, f)
    print(f"OK encoded {len(lines)} lines with {type(tok).__name__}")
    return 0


def save_dtypes(path):
    x = torch.arange(12, dtype=torch.float32).reshape(3, 4) / 4
    safetensors.torch.save_file({"f32": x, "f16": x.half(), "bf16": x.bfloat16(),
                                 "count": torch.tensor(7, dtype=torch.int64)}, path,
                                metadata={"format": "pt"})
    return 0


def main(argv):
    torch.set_num_threads(1)
    command, args = (argv[1], argv[2:]) if len(argv) > 1 else ("", [])
    if command == "save-resnet18" and len(args) == 2:
        return save_resnet("torchvision", 18, args[0], args[1], torch.save)
    if command == "check-resnet18" and len(args) == 2:
        return check_logits(resnet("torchvision", 18), torch.load(args[0]), args[1], "input",
                            "resnet18")
    if command == "save-resnet50" and len(args) == 3:
        return save_resnet(args[0], 50, args[1], args[2], safetensors.torch.save_file)
    if command == "check-resnet50" and len(args) == 3:
        return check_logits(resnet(args[0], 50), safetensors.torch.load_file(args[1]), args[2],
                            "input", f"{args[0]} resnet50")
    if command == "save-bert" and len(args) == 4:
        return save_bert(args[0], args[1], int(args[2]), int(args[3]))
    if command == "check-bert" and len(args) == 2:
        return check_bert(*args)
    if command == "compare-logits" and len(args) in (3, 4):
        return compare_logits(args[0], args[1], float(args[2]), *args[3:])
    if command == "save-gpt2" and len(args) == 4:
        return save_gpt2(args[0], args[1], int(args[2]), int(args[3]))
    if command == "check-gpt2" and len(args) == 2:
        return check_gpt2(*args)
    if command == "check-gpt2-state" and len(args) == 3:
        return check_gpt2_state(args[0], int(args[1]), int(args[2]))
    if command == "encode" and len(args) == 3:
        return encode(*args)
    if command == "save-dtypes" and len(args) == 1:
        return save_dtypes(args[0])
    if command == "save-list" and len(args) == 1:
        torch.save([torch.zeros(2), torch.ones(3)], args[0])
        return 0
    if command == "save-torchscript" and len(args) == 1:
        torch.jit.save(torch.jit.script(nn.Linear(2, 2)), args[0])
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
