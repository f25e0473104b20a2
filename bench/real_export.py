"""Export the real-model suite (issue 14) the way users get their models: torchvision and
transformers architectures (plus two small torch modules for families neither library ships:
an LSTM and a YOLO-style detection head), random weights, batch-norm statistics calibrated on
random batches so activations do not vanish, exported by torch's dynamo exporter at opset 18.

    python -m bench.real_export [--out DIR] [--only NAME ...] [--force]

Each model becomes DIR/NAME.onnx, weights inside (an export whose weights torch puts in a
separate file is refused, and leaves nothing behind), and DIR/NAME.npz, the sample inputs both
runtimes get. Needs the `bench` extra (torch, torchvision,
transformers, onnxscript). The files are not committed: this script is."""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

OPSET = 18


def default_dir() -> Path:
    root = os.environ.get("NNVM_BENCH_MODELS")
    return Path(root) if root else Path.home() / ".cache" / "nnvm" / "bench-real"


@dataclass(frozen=True)
class Spec:
    family: str  # what the model stresses, for the table
    build: Callable[[], tuple[object, dict[str, np.ndarray]]]  # -> (torch module, inputs)


# -- the models ------------------------------------------------------------------------------


def _image(batch: int = 1, size: int = 224, channels: int = 3) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    return {"x": rng.standard_normal((batch, channels, size, size)).astype(np.float32)}


def _tv(name: str, batch: int = 1, size: int = 224, **kwargs):
    def build():
        import torchvision

        model = getattr(torchvision.models, name)(weights=None, **kwargs)
        return model, _image(batch, size)

    return build


def _vit():
    from torchvision.models import VisionTransformer

    model = VisionTransformer(
        image_size=224, patch_size=16, num_layers=4, num_heads=12, hidden_dim=768, mlp_dim=3072
    )
    return model, _image()


def _deeplab():
    from torchvision.models.segmentation import deeplabv3_mobilenet_v3_large

    model = deeplabv3_mobilenet_v3_large(
        weights=None, weights_backbone=None, num_classes=21, aux_loss=False
    )
    return _OutputOf(model, "out"), _image(size=256)


def _video():
    from torchvision.models.video import r3d_18

    rng = np.random.default_rng(0)
    return r3d_18(weights=None), {"x": rng.standard_normal((1, 3, 8, 112, 112)).astype(np.float32)}


def _tokens(batch: int, seq: int, vocab: int, padded: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    ids = rng.integers(0, vocab, (batch, seq), dtype=np.int64)
    mask = np.ones((batch, seq), dtype=np.int64)
    if padded:
        mask[-1, seq - padded :] = 0  # the last sequence is shorter: a padding mask
    return {"input_ids": ids, "attention_mask": mask}


def _bert():
    from transformers import BertConfig, BertModel

    config = BertConfig(num_hidden_layers=6)
    return _HiddenStates(BertModel(config)), _tokens(1, 16, config.vocab_size)


def _distilbert():
    from transformers import DistilBertConfig, DistilBertModel

    config = DistilBertConfig()
    return _HiddenStates(DistilBertModel(config)), _tokens(2, 32, config.vocab_size, padded=9)


def _gpt2():
    from transformers import GPT2Config, GPT2Model

    config = GPT2Config(n_layer=4, n_embd=512, n_head=8, use_cache=False)
    inputs = _tokens(1, 32, config.vocab_size)
    return _HiddenStates(GPT2Model(config)), inputs


def _llama():
    from transformers import LlamaConfig, LlamaModel

    config = LlamaConfig(
        vocab_size=32000,
        hidden_size=512,
        intermediate_size=1376,
        num_hidden_layers=4,
        num_attention_heads=8,
        num_key_value_heads=2,
        use_cache=False,
    )
    return _HiddenStates(LlamaModel(config)), _tokens(1, 29, config.vocab_size)


def _whisper_encoder():
    from transformers import WhisperConfig
    from transformers.models.whisper.modeling_whisper import WhisperEncoder

    config = WhisperConfig(
        num_mel_bins=80,
        d_model=384,
        encoder_layers=4,
        encoder_attention_heads=6,
        encoder_ffn_dim=1536,
        max_source_positions=250,
    )
    rng = np.random.default_rng(0)
    features = rng.standard_normal((1, 80, 500)).astype(np.float32)
    return _FeaturesEncoder(WhisperEncoder(config)), {"input_features": features}


def _lstm():
    import torch

    class TwoLayerLSTM(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = torch.nn.LSTM(128, 256, num_layers=2)
            self.head = torch.nn.Linear(256, 10)

        def forward(self, x):
            y, _ = self.lstm(x)
            return self.head(y)

    rng = np.random.default_rng(0)
    return TwoLayerLSTM(), {"x": rng.standard_normal((32, 1, 128)).astype(np.float32)}


def _detector():
    """A YOLOv8-style detector at width 1/4: Conv-BN-SiLU, cross-stage blocks with concat, an
    SPPF block (three chained 5x5 max pools), nearest upsampling into a feature pyramid, and a
    box head that decodes a distribution (softmax over 16 bins per side, DFL)."""
    import torch
    from torch import nn

    def conv(cin, cout, k=3, s=1):
        return nn.Sequential(
            nn.Conv2d(cin, cout, k, s, k // 2, bias=False), nn.BatchNorm2d(cout), nn.SiLU()
        )

    class C2f(nn.Module):
        def __init__(self, cin, cout, n=1):
            super().__init__()
            self.c = cout // 2
            self.cv1 = conv(cin, 2 * self.c, 1)
            self.m = nn.ModuleList(
                nn.Sequential(conv(self.c, self.c), conv(self.c, self.c)) for _ in range(n)
            )
            self.cv2 = conv((2 + n) * self.c, cout, 1)

        def forward(self, x):
            y = list(self.cv1(x).chunk(2, 1))
            for m in self.m:
                y.append(y[-1] + m(y[-1]))
            return self.cv2(torch.cat(y, 1))

    class SPPF(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.cv1 = conv(c, c // 2, 1)
            self.cv2 = conv(c * 2, c, 1)
            self.pool = nn.MaxPool2d(5, 1, 2)

        def forward(self, x):
            x = self.cv1(x)
            y1 = self.pool(x)
            y2 = self.pool(y1)
            return self.cv2(torch.cat([x, y1, y2, self.pool(y2)], 1))

    class Detector(nn.Module):
        def __init__(self, classes=80, bins=16):
            super().__init__()
            self.bins = bins
            self.stem = nn.Sequential(conv(3, 16, 3, 2), conv(16, 32, 3, 2), C2f(32, 32))
            self.p3 = nn.Sequential(conv(32, 64, 3, 2), C2f(64, 64, 2))
            self.p4 = nn.Sequential(conv(64, 128, 3, 2), C2f(128, 128, 2))
            self.p5 = nn.Sequential(conv(128, 256, 3, 2), C2f(256, 256), SPPF(256))
            self.up = nn.Upsample(scale_factor=2, mode="nearest")
            self.n4 = C2f(256 + 128, 128)
            self.n3 = C2f(128 + 64, 64)
            self.heads = nn.ModuleList(
                nn.Sequential(conv(c, 64), nn.Conv2d(64, 4 * bins + classes, 1))
                for c in (64, 128, 256)
            )
            self.register_buffer("proj", torch.arange(bins, dtype=torch.float32))

        def forward(self, x):
            p3 = self.p3(self.stem(x))
            p4 = self.p4(p3)
            p5 = self.p5(p4)
            n4 = self.n4(torch.cat([self.up(p5), p4], 1))
            n3 = self.n3(torch.cat([self.up(n4), p3], 1))
            outs = []
            for head, f in zip(self.heads, (n3, n4, p5), strict=True):
                y = head(f).flatten(2)  # [1, 4*bins + classes, cells]
                box, cls = y.split([4 * self.bins, y.shape[1] - 4 * self.bins], 1)
                b = box.view(box.shape[0], 4, self.bins, -1).softmax(2)
                dist = (b * self.proj.view(1, 1, -1, 1)).sum(2)  # DFL: expected bin
                outs.append(torch.cat([dist, cls.sigmoid()], 1))
            return torch.cat(outs, 2)

    return Detector(), _image(size=320)


def _unet():
    """A diffusion-style UNet at 128x128: residual blocks of GroupNorm (8 groups) + SiLU + 3x3
    conv, stride-2 convs down, 4x4 stride-2 transposed convs up, skip connections by concat."""
    import torch
    from torch import nn

    class Block(nn.Module):
        def __init__(self, cin, cout):
            super().__init__()
            self.n1, self.c1 = nn.GroupNorm(8, cin), nn.Conv2d(cin, cout, 3, padding=1)
            self.n2, self.c2 = nn.GroupNorm(8, cout), nn.Conv2d(cout, cout, 3, padding=1)
            self.skip = nn.Conv2d(cin, cout, 1) if cin != cout else nn.Identity()

        def forward(self, x):
            h = self.c1(nn.functional.silu(self.n1(x)))
            return self.c2(nn.functional.silu(self.n2(h))) + self.skip(x)

    class UNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.inp = nn.Conv2d(3, 32, 3, padding=1)
            self.d1, self.down1 = Block(32, 32), nn.Conv2d(32, 64, 3, stride=2, padding=1)
            self.d2, self.down2 = Block(64, 64), nn.Conv2d(64, 128, 3, stride=2, padding=1)
            self.mid = Block(128, 128)
            self.up2, self.u2 = nn.ConvTranspose2d(128, 64, 4, stride=2, padding=1), Block(128, 64)
            self.up1, self.u1 = nn.ConvTranspose2d(64, 32, 4, stride=2, padding=1), Block(64, 32)
            self.out = nn.Conv2d(32, 3, 3, padding=1)

        def forward(self, x):
            h0 = self.d1(self.inp(x))
            h1 = self.d2(self.down1(h0))
            m = self.mid(self.down2(h1))
            u = self.u2(torch.cat([self.up2(m), h1], 1))
            return self.out(self.u1(torch.cat([self.up1(u), h0], 1)))

    return UNet(), _image(size=128)


def _segformer():
    from transformers import SegformerConfig, SegformerForSemanticSegmentation

    class Logits(_module_base()):
        def __init__(self):
            super().__init__()
            self.model = SegformerForSemanticSegmentation(SegformerConfig())

        def forward(self, x):
            return self.model(pixel_values=x).logits

    return Logits(), _image(size=256)


SUITE: dict[str, Spec] = {
    "vit-b16-4l": Spec("vision transformer, 197 tokens, hidden 768", _vit),
    "deeplabv3-mnv3": Spec("segmentation: dilated convs, bilinear upsampling", _deeplab),
    "gpt2-4l": Spec("causal decoder, tanh-GELU, causal mask", _gpt2),
    "yolo-style": Spec("detection: SPPF max pools, concat, nearest resize, DFL", _detector),
    "convnext-tiny": Spec("7x7 depthwise, LayerNorm over channels, GELU", _tv("convnext_tiny")),
    "mobilenetv3-large": Spec("squeeze-excite, hard-swish", _tv("mobilenet_v3_large")),
    "efficientnet-b0": Spec("SiLU, squeeze-excite", _tv("efficientnet_b0")),
    "lstm-2l": Spec("2-layer LSTM, seq 32", _lstm),
    "resnet50": Spec("ResNet-50", _tv("resnet50")),
    "mobilenetv2": Spec("MobileNetV2", _tv("mobilenet_v2")),
    "bert-6l-seq16": Spec("BERT encoder, seq 16", _bert),
    "regnety-400mf": Spec("grouped convs (8-16 per group), squeeze-excite", _tv("regnet_y_400mf")),
    "shufflenetv2": Spec("channel shuffle", _tv("shufflenet_v2_x1_0")),
    "resnext50-b2": Spec("32-group ResNeXt, batch 2", _tv("resnext50_32x4d", batch=2)),
    "llama-4l": Spec("RMSNorm, rotary, SiLU gating, grouped-query attention", _llama),
    "whisper-enc": Spec("Conv1d + attention audio encoder", _whisper_encoder),
    "inception-v3": Spec(
        "1x7/7x1 kernels, many concats, 299x299",
        _tv("inception_v3", size=299, aux_logits=False, init_weights=True),
    ),
    "squeezenet-b4": Spec("fire modules, batch 4", _tv("squeezenet1_1", batch=4)),
    "distilbert-b2": Spec("encoder, batch 2 with a padding mask", _distilbert),
    "mnasnet": Spec("MnasNet", _tv("mnasnet1_0")),
    "densenet121": Spec("dense concat blocks", _tv("densenet121")),
    "r3d-18": Spec("3-D convs, 8 frames at 112x112", _video),
    "swin-t": Spec("shifted-window transformer", _tv("swin_t")),
    "unet-gn": Spec("UNet: GroupNorm + SiLU, transposed convs, skip concats", _unet),
    "segformer-b0": Spec("SegFormer: reduced-key attention, Mix-FFN, tokens <-> NCHW", _segformer),
}


# -- wrappers: one tensor out, named inputs ---------------------------------------------------


def _module_base():
    """Wrapper classes are made on first use, so importing this file needs no torch."""
    import torch

    return torch.nn.Module


def _OutputOf(model, key):  # noqa: N802 (a class factory)
    class OutputOf(_module_base()):
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, x):
            return self.model(x)[key]

    return OutputOf()


def _HiddenStates(model):  # noqa: N802
    class HiddenStates(_module_base()):
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, input_ids, attention_mask):
            return self.model(input_ids=input_ids, attention_mask=attention_mask)[0]

    return HiddenStates()


def _FeaturesEncoder(model):  # noqa: N802
    class FeaturesEncoder(_module_base()):
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, input_features):
            return self.model(input_features)[0]

    return FeaturesEncoder()


# -- export ----------------------------------------------------------------------------------


def calibrate_batch_norm(model, inputs: dict[str, np.ndarray], batches: int = 3) -> None:
    """Running statistics from random batches (cumulative averages, in train mode), so a
    randomly initialised network's activations keep their scale through eval-mode BN."""
    import torch

    norms = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    if not norms:
        return
    for m in norms:
        m.reset_running_stats()
        m.momentum = None
    model.train()
    gen = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for _ in range(batches):
            args = []
            for value in inputs.values():
                shape = (max(4, value.shape[0]), *value.shape[1:])
                args.append(torch.randn(shape, generator=gen))
            model(*args)
    model.eval()


def export_one(name: str, out: Path) -> Path:
    import torch

    torch.manual_seed(0)
    model, inputs = SUITE[name].build()
    model.eval()
    calibrate_batch_norm(model, inputs)
    args = tuple(torch.from_numpy(v) for v in inputs.values())
    path = out / f"{name}.onnx"
    tmp = out / f".{name}.tmp.onnx"
    with torch.no_grad():
        program = torch.onnx.export(
            model,
            args,
            input_names=list(inputs),
            output_names=["y"],
            opset_version=OPSET,
            dynamo=True,
            verbose=False,
        )
    program.save(str(tmp))
    data = out / f".{name}.tmp.onnx.data"
    if data.exists():  # torch keeps weights beside the model when they are large
        tmp.unlink()
        data.unlink()
        raise RuntimeError(f"{name}: the export put its weights in an external file")
    np.savez(out / f"{name}.npz", **inputs)
    tmp.replace(path)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.real_export", description=__doc__)
    parser.add_argument("--out", type=Path, default=default_dir())
    parser.add_argument("--only", nargs="+", choices=sorted(SUITE), default=list(SUITE))
    parser.add_argument("--force", action="store_true", help="export again what is there")
    args = parser.parse_args(argv)
    try:
        import torch  # noqa: F401
    except ImportError:
        print("the real-model suite needs the bench extra: pip install -e '.[bench]'")
        return 1
    args.out.mkdir(parents=True, exist_ok=True)
    failed = []
    for name in args.only:
        path = args.out / f"{name}.onnx"
        if path.exists() and (args.out / f"{name}.npz").exists() and not args.force:
            continue
        start = time.perf_counter()
        try:
            export_one(name, args.out)
        except Exception as err:  # an export torch cannot do: report it, go on
            failed.append(name)
            print(f"{name}: export failed: {type(err).__name__}: {str(err)[:300]}", flush=True)
            continue
        print(f"{name}: exported in {time.perf_counter() - start:.1f} s", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
