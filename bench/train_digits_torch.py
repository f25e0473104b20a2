"""The digits CNN of examples/train_digits in torch CPU (same layers, Adam(0.01), batch 32, 1
thread), for the time per epoch beside nnvm's: python bench/train_digits_torch.py (bench extra)."""

import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples" / "train_digits"))
import train_digits as td

torch.set_num_threads(1)
(xtr, ytr), (xte, yte) = td.load_digits(0)
torch.manual_seed(0)
net = torch.nn.Sequential(
    torch.nn.Conv2d(1, 8, 3, padding=1),
    torch.nn.ReLU(),
    torch.nn.MaxPool2d(2),
    torch.nn.Conv2d(8, 16, 3, padding=1),
    torch.nn.ReLU(),
    torch.nn.Flatten(),
    torch.nn.Linear(256, 10),
)
opt = torch.optim.Adam(net.parameters(), lr=0.01)
lossf = torch.nn.CrossEntropyLoss()
X, Y = torch.from_numpy(xtr), torch.from_numpy(ytr)
times = []
for epoch in range(8):
    order = np.random.default_rng(epoch).permutation(len(Y))
    t0 = time.perf_counter()
    for i in range(0, len(order) - 31, 32):
        idx = torch.from_numpy(order[i : i + 32])
        opt.zero_grad()
        loss = lossf(net(X[idx]), Y[idx])
        loss.backward()
        opt.step()
    times.append(time.perf_counter() - t0)
acc = (net(torch.from_numpy(xte)).argmax(1).numpy() == yte).mean()
print(f"torch: {np.median(times):.3f} s/epoch (median of 8), test accuracy {acc:.4f}")
