#!/usr/bin/env python3
"""Python peers of tests/cli/export_cli_test.cpp: weights into batchlab (model.init_from) and back
out of it (batchlab export), checked by PyTorch itself.

Runs under the project virtualenv's Python (.venv/bin/python: the torch whose LibTorch batchlab
links, and torchvision; made by scripts/setup.sh), one thread, fixed seeds.

    pytorch_interchange.py save-resnet18 STATE IO
        torchvision.models.resnet18(weights=None), two train-mode forwards so the BN running
        statistics are not trivial, torch.save(model.state_dict(), STATE) (an OrderedDict), and
        IO = {"input": [2, 3, 32, 32], "logits": eval-mode logits of that model}.

    pytorch_interchange.py check-resnet18 EXPORTED IO
        torch.load(EXPORTED) into a fresh torchvision resnet18 with load_state_dict(strict=True);
        its eval-mode logits on IO's input must equal IO's logits exactly (torch.equal).

    pytorch_interchange.py save-bert STATE IO VOCAB MAX_POS
        HfBertForMaskedLM below (Hugging Face's BertForMaskedLM structure and names, bert_tiny
        sizes: 2 layers, hidden 128, 2 heads, intermediate 512), every parameter random, saved
        with torch.save(model.state_dict(), STATE): the tied decoder entries are in it, as in a
        Hugging Face file (position_ids is not: transformers >= 4.31 does not save it). IO = {"input_ids" [2, 16],
        "logits": eval-mode MLM logits at every position [2, 16, VOCAB]}.

    pytorch_interchange.py check-bert EXPORTED IO VOCAB MAX_POS
        The same for a fresh HfBertForMaskedLM (load_state_dict(strict=True), logits torch.equal).

    pytorch_interchange.py save-list FILE        torch.save([tensor, tensor], FILE): not a dict
    pytorch_interchange.py save-torchscript FILE torch.jit.save of a scripted Linear

Exit 0 and a line "OK ..." when a check holds, 1 when it does not, 3 when torch or torchvision
cannot be imported.
"""
import sys

try:
    import torch
    import torch.nn.functional as F
    import torchvision
    from torch import nn
except ImportError as e:  # the C++ test turns this into a skip with a setup hint
    print(f"cannot import torch/torchvision in {sys.executable}: {e}; "
          "run scripts/setup.sh --with-python", file=sys.stderr)
    sys.exit(3)

HIDDEN, LAYERS, HEADS, INTERMEDIATE, EPS = 128, 2, 2, 512, 1e-12


class Dense(nn.Module):
    """A Linear and optionally a LayerNorm, named as Hugging Face names them."""

    def __init__(self, n_in, n_out, norm):
        super().__init__()
        self.dense = nn.Linear(n_in, n_out)
        if norm:
            self.LayerNorm = nn.LayerNorm(n_out, eps=EPS)


class SelfAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.query = nn.Linear(HIDDEN, HIDDEN)
        self.key = nn.Linear(HIDDEN, HIDDEN)
        self.value = nn.Linear(HIDDEN, HIDDEN)

    def forward(self, x):
        b, t, _ = x.shape
        split = lambda y: y.view(b, t, HEADS, HIDDEN // HEADS).transpose(1, 2)
        q, k, v = split(self.query(x)), split(self.key(x)), split(self.value(x))
        scores = q @ k.transpose(-1, -2) / (HIDDEN // HEADS) ** 0.5
        return (scores.softmax(-1) @ v).transpose(1, 2).reshape(b, t, HIDDEN)


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        setattr(self, "self", SelfAttention())
        self.output = Dense(HIDDEN, HIDDEN, True)

    def forward(self, x):
        h = getattr(self, "self")(x)
        return self.output.LayerNorm(x + self.output.dense(h))


class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.attention = Attention()
        self.intermediate = Dense(HIDDEN, INTERMEDIATE, False)
        self.output = Dense(INTERMEDIATE, HIDDEN, True)

    def forward(self, x):
        x = self.attention(x)
        h = F.gelu(self.intermediate.dense(x))
        return self.output.LayerNorm(x + self.output.dense(h))


class Embeddings(nn.Module):
    def __init__(self, vocab, max_pos):
        super().__init__()
        self.word_embeddings = nn.Embedding(vocab, HIDDEN)
        self.position_embeddings = nn.Embedding(max_pos, HIDDEN)
        self.token_type_embeddings = nn.Embedding(2, HIDDEN)
        self.LayerNorm = nn.LayerNorm(HIDDEN, eps=EPS)
        # Not saved, as in transformers >= 4.31 (older files list it; batchlab drops it on import).
        self.register_buffer("position_ids", torch.arange(max_pos).expand((1, -1)),
                             persistent=False)

    def forward(self, ids):
        positions = self.position_ids[:, : ids.size(1)]
        x = (self.word_embeddings(ids) + self.position_embeddings(positions)
             + self.token_type_embeddings(torch.zeros_like(ids)))
        return self.LayerNorm(x)


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = nn.ModuleList([Layer() for _ in range(LAYERS)])


class Bert(nn.Module):
    def __init__(self, vocab, max_pos):
        super().__init__()
        self.embeddings = Embeddings(vocab, max_pos)
        self.encoder = Encoder()


class PredictionHead(nn.Module):
    def __init__(self, vocab, embedding):
        super().__init__()
        self.transform = Dense(HIDDEN, HIDDEN, True)
        self.decoder = nn.Linear(HIDDEN, vocab)
        self.bias = nn.Parameter(torch.zeros(vocab))
        self.decoder.weight = embedding.weight  # tied, as Hugging Face ties them
        self.decoder.bias = self.bias


class Cls(nn.Module):
    def __init__(self, vocab, embedding):
        super().__init__()
        self.predictions = PredictionHead(vocab, embedding)


class HfBertForMaskedLM(nn.Module):
    """Hugging Face's BertForMaskedLM: bert.* and cls.predictions.*, post-LN, exact GELU."""

    def __init__(self, vocab, max_pos):
        super().__init__()
        self.bert = Bert(vocab, max_pos)
        self.cls = Cls(vocab, self.bert.embeddings.word_embeddings)

    def forward(self, ids):
        x = self.bert.embeddings(ids)
        for layer in self.bert.encoder.layer:
            x = layer(x)
        t = self.cls.predictions.transform
        return self.cls.predictions.decoder(t.LayerNorm(F.gelu(t.dense(x))))


def fresh_resnet18():
    return torchvision.models.resnet18(weights=None)


def save_resnet18(state_path, io_path):
    torch.manual_seed(0)
    model = fresh_resnet18()
    model.train()
    with torch.no_grad():
        for _ in range(2):
            model(torch.randn(4, 3, 32, 32))
    model.eval()
    x = torch.randn(2, 3, 32, 32)
    with torch.no_grad():
        logits = model(x)
    torch.save(model.state_dict(), state_path)
    torch.save({"input": x, "logits": logits}, io_path)
    print(f"saved resnet18: {len(model.state_dict())} entries")
    return 0


def save_bert(state_path, io_path, vocab, max_pos):
    torch.manual_seed(1)
    model = HfBertForMaskedLM(vocab, max_pos)
    with torch.no_grad():  # LayerNorms and biases random too: a misplaced tensor cannot hide
        for name, p in model.named_parameters():
            if "LayerNorm" in name or name.endswith("bias"):
                p.add_(0.1 * torch.randn_like(p))
    model.eval()
    ids = torch.randint(0, vocab, (2, 16))
    with torch.no_grad():
        logits = model(ids)
    torch.save(model.state_dict(), state_path)
    torch.save({"input_ids": ids, "logits": logits}, io_path)
    print(f"saved bert: {len(model.state_dict())} entries")
    return 0


def check(model, exported_path, io_path, input_key, label):
    state = torch.load(exported_path)
    model.load_state_dict(state, strict=True)  # raises on any missing/unexpected/mis-shaped key
    model.eval()
    io = torch.load(io_path)
    with torch.no_grad():
        logits = model(io[input_key])
    if not torch.equal(logits, io["logits"]):
        diff = (logits - io["logits"]).abs().max().item()
        print(f"{label}: logits differ from the original model's (max abs diff {diff:.3e})",
              file=sys.stderr)
        return 1
    print(f"OK {label}: {len(state)} entries loaded strictly, logits identical")
    return 0


def main(argv):
    torch.set_num_threads(1)
    command, args = (argv[1], argv[2:]) if len(argv) > 1 else ("", [])
    if command == "save-resnet18" and len(args) == 2:
        return save_resnet18(*args)
    if command == "check-resnet18" and len(args) == 2:
        return check(fresh_resnet18(), args[0], args[1], "input", "resnet18")
    if command == "save-bert" and len(args) == 4:
        return save_bert(args[0], args[1], int(args[2]), int(args[3]))
    if command == "check-bert" and len(args) == 4:
        return check(HfBertForMaskedLM(int(args[2]), int(args[3])), args[0], args[1],
                     "input_ids", "bert")
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
