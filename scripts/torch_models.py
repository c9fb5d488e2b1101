#!/usr/bin/python3
"""torch_models.py -- the four models scripts/measure_torch.py trains on the CPU.

Each builder callable (resnet18, vgg11, transformer, ctr) takes no
argument and returns a torch.nn.Module with two extra attributes:

  example_input(batch)  a tuple of synthetic input tensors for one step of
                        `batch` samples (fixed seed, the shapes below)
  loss(out, batch)      the training loss of the model's output (synthetic
                        labels)

so that scripts/measure_torch.py can train it and a profiler (strata-profile
MODULE:CALLABLE) can trace it at the same input sizes. Sizes are reduced
from the published models so that a 2-core machine trains each at 8 to 32
samples per step in seconds:

  resnet18     torchvision ResNet-18, 10 classes, 3x64x64 images
  vgg11        torchvision VGG-11 convolutions (with BN off), 3x32x32
               images, CIFAR-style head: global average pool + one
               512x10 linear layer (the 224-px head's 25088x4096 layer
               would dominate an all-reduce on 32-px inputs)
  transformer  post-norm encoder: 8000-token embedding, 4 layers of
               d_model 256, 4 heads, feed-forward 1024, sequence 64,
               mean pool + 2-class head
  ctr          DLRM-style CTR model: 13 dense features through a bottom
               MLP 13-256-64-32, 8 sum-pooled EmbeddingBag tables of
               20000 x 32 (4 ids per bag), pairwise dot interaction of
               the 9 vectors, top MLP (36+32)-256-128-1, BCE loss

Data is synthetic (random images, token ids, features and labels of the
right shape): the timings measure the training step, not data loading.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

IMG_RESNET = 64
IMG_VGG = 32
CLASSES = 10
SEQ = 64
VOCAB = 8000
D_MODEL = 256
CTR_TABLES = 8
CTR_ROWS = 20000
CTR_DIM = 32
CTR_BAG = 4
CTR_DENSE = 13


def _gen(batch):
    g = torch.Generator()
    g.manual_seed(1234 + batch)
    return g


def _classify(model, shape, classes):
    """Attaches example_input/loss for an image or token classifier."""
    def example_input(batch):
        g = _gen(batch)
        if shape is None:  # tokens
            return (torch.randint(0, VOCAB, (batch, SEQ), generator=g),)
        return (torch.randn((batch,) + shape, generator=g),)

    def loss(out, batch):
        y = torch.arange(batch) % classes
        return F.cross_entropy(out, y)

    model.example_input = example_input
    model.loss = loss
    return model


def resnet18():
    import torchvision
    return _classify(torchvision.models.resnet18(num_classes=CLASSES),
                     (3, IMG_RESNET, IMG_RESNET), CLASSES)


def vgg11():
    import torchvision
    m = torchvision.models.vgg11(num_classes=CLASSES)
    m.avgpool = nn.AdaptiveAvgPool2d(1)
    m.classifier = nn.Sequential(nn.Flatten(), nn.Linear(512, CLASSES))
    return _classify(m, (3, IMG_VGG, IMG_VGG), CLASSES)


class _Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, D_MODEL)
        self.pos = nn.Parameter(torch.zeros(SEQ, D_MODEL))
        layer = nn.TransformerEncoderLayer(D_MODEL, 4, 1024, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 4, enable_nested_tensor=False)
        self.head = nn.Linear(D_MODEL, 2)

    def forward(self, tokens):  # tokens [B,SEQ] -> logits [B,2]
        x = self.embed(tokens) + self.pos
        return self.head(self.encoder(x).mean(dim=1))


def transformer():
    return _classify(_Encoder(), None, 2)


class _Sparse(nn.Module):
    """The embedding tables and the dot interaction, one module (one layer for
    strata-profile, whose counted FLOP are the interaction's bmm: a layer of
    lookups alone would have none)."""

    def __init__(self):
        super().__init__()
        self.tables = nn.ModuleList(nn.EmbeddingBag(CTR_ROWS, CTR_DIM, mode="sum")
                                    for _ in range(CTR_TABLES))

    def forward(self, x, ids):  # x [B,32], ids [B,T,BAG] -> [B, 32 + T(T+1)/2]
        vecs = [x] + [t(ids[:, i]) for i, t in enumerate(self.tables)]
        z = torch.stack(vecs, dim=1)  # [B,9,32]
        dots = torch.bmm(z, z.transpose(1, 2))
        i, j = torch.triu_indices(z.shape[1], z.shape[1], offset=1)
        return torch.cat([x, dots[:, i, j]], dim=1)


class _CTR(nn.Module):
    def __init__(self):
        super().__init__()
        self.bottom = nn.Sequential(nn.Linear(CTR_DENSE, 256), nn.ReLU(),
                                    nn.Linear(256, 64), nn.ReLU(),
                                    nn.Linear(64, CTR_DIM), nn.ReLU())
        self.sparse = _Sparse()
        n = CTR_TABLES + 1
        self.top = nn.Sequential(nn.Linear(n * (n - 1) // 2 + CTR_DIM, 256), nn.ReLU(),
                                 nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 1))

    def forward(self, dense, ids):  # dense [B,13], ids [B,T,BAG] -> logit [B]
        return self.top(self.sparse(self.bottom(dense), ids)).squeeze(1)


def ctr():
    m = _CTR()

    def example_input(batch):
        g = _gen(batch)
        return (torch.randn(batch, CTR_DENSE, generator=g),
                torch.randint(0, CTR_ROWS, (batch, CTR_TABLES, CTR_BAG), generator=g))

    def loss(out, batch):
        y = (torch.arange(batch) % 2).float()
        return F.binary_cross_entropy_with_logits(out, y)

    m.example_input = example_input
    m.loss = loss
    return m


MODELS = {"resnet18": resnet18, "vgg11": vgg11, "transformer": transformer, "ctr": ctr}
