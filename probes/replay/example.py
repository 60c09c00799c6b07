"""replay's built-in example: a small transformer language-model training step (2 layers, d_model 256, 4 heads)."""

from __future__ import annotations

import torch
from torch import nn

VOCAB, D_MODEL, HEADS, LAYERS, SEQ, BATCH = 1000, 256, 4, 2, 128, 8


class BucketMix(nn.Module):
    """Adds to each token the sum of its hash bucket, accumulated with index_add_ (atomics on CUDA floats)."""

    def __init__(self, buckets: int = 64) -> None:
        super().__init__()
        self.buckets = buckets

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        flat = x.reshape(-1, x.shape[-1])
        index = torch.arange(flat.shape[0], device=x.device) % self.buckets
        sums = torch.zeros(self.buckets, x.shape[-1], device=x.device, dtype=x.dtype).index_add_(0, index, flat)
        return x + (sums[index] / flat.shape[0]).reshape(x.shape)


class TinyLM(nn.Module):
    """Embedding, optional BucketMix, two encoder layers, a vocabulary head."""

    def __init__(self, mix: bool) -> None:
        super().__init__()
        self.embedding = nn.Embedding(VOCAB, D_MODEL)
        self.mix = BucketMix() if mix else nn.Identity()
        layer = nn.TransformerEncoderLayer(D_MODEL, HEADS, dim_feedforward=4 * D_MODEL, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, LAYERS, enable_nested_tensor=False)
        self.head = nn.Linear(D_MODEL, VOCAB)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.head(self.encoder(self.mix(self.embedding(tokens))))
        return out


def build(device: str, plant: str) -> tuple[TinyLM, torch.optim.Optimizer, nn.Module, torch.Tensor, torch.Tensor]:
    """The model, its optimizer, the loss module and one fixed batch (inputs, targets)."""
    model = TinyLM(mix=plant == "index-add").to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    gen = torch.Generator().manual_seed(1234)
    tokens = torch.randint(0, VOCAB, (BATCH, SEQ + 1), generator=gen).to(device)
    return model, optimizer, nn.CrossEntropyLoss(), tokens[:, :-1], tokens[:, 1:]


def train_step(
    model: nn.Module, optimizer: torch.optim.Optimizer, loss_fn: nn.Module, x: torch.Tensor, y: torch.Tensor
) -> torch.Tensor:
    """One forward, backward and AdamW update; returns the loss (still on the device)."""
    optimizer.zero_grad(set_to_none=True)
    loss: torch.Tensor = loss_fn(model(x).reshape(-1, VOCAB), y.reshape(-1))
    loss.backward()  # type: ignore[no-untyped-call]  # torch leaves it unannotated
    optimizer.step()
    return loss.detach()


def train(device: str = "cpu", steps: int = 3, plant: str = "none") -> None:
    """`steps` training steps on one fixed batch; plant `index-add` adds a layer that is nondeterministic on CUDA."""
    model, optimizer, loss_fn, x, y = build(device, plant)
    for _ in range(steps):
        train_step(model, optimizer, loss_fn, x, y)
