"""A ResNet that builds itself in bf16 or fp16 (the run's dtype option stays at float32), optionally miscompiled.

torchvision's resnet18 where torchvision is installed, else a small ResNet of the same shape of
blocks. ``wrong=1`` flips the sign of the largest logit in the compiled graph only
(``torch.compiler.is_compiling()`` is True while dynamo traces): a miscompile that changes the
prediction, which the accuracy check must catch.
"""

import torch
from torch import nn


class _Block(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return torch.relu(y + (x if self.down is None else self.down(x)))


def _small_resnet() -> nn.Module:
    widths = [64, 128, 256, 512]
    layers = [nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(3, 2, 1)]
    cin = 64
    for i, width in enumerate(widths):
        layers += [_Block(cin, width, 1 if i == 0 else 2), _Block(width, width, 1)]
        cin = width
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, 1000)]
    return nn.Sequential(*layers)


def _resnet() -> nn.Module:
    try:
        from torchvision.models import resnet18
    except ImportError:
        return _small_resnet()
    return resnet18()


class Miscompiled(nn.Module):
    """``inner``, with the sign of its largest output flipped when compiled."""

    def __init__(self, inner: nn.Module) -> None:
        super().__init__()
        self.inner = inner

    def forward(self, x):
        y = self.inner(x)
        if torch.compiler.is_compiling():
            flat = y.flatten()
            index = flat.abs().argmax()
            flat = flat.index_put((index.reshape(1),), -flat[index].reshape(1))
            y = flat.view_as(y)
        return y


def make_workload(device, dtype, precision="bfloat16", batch="32", size="224", wrong="0"):
    low = getattr(torch, precision)
    model = _resnet()
    if wrong == "1":
        model = Miscompiled(model)
    model = model.to(device=device, dtype=low).eval().requires_grad_(False)
    x = torch.randn(int(batch), 3, int(size), int(size), device=device, dtype=low)
    return model, (x,)
