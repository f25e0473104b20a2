"""Bad plugins are UserErrors that name their source: one that fails to import, a name defined
twice, a plugin for another API version, a module that holds no plugin; a plugin module loaded
by path contributes its target."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from nnvm.support.errors import UserError
from nnvm.support.plugins import PLUGIN_API_VERSION, load_plugin_module, registry
from nnvm.support.target import parse_target

PLUGIN_HEAD = "from nnvm.support.plugins import Plugin, lazy_pass\n"


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / f"{name}.py"
    path.write_text(text)
    return path


def test_plugin_by_path_adds_a_target(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "mydev",
        "from nnvm.support.plugins import Plugin\n"
        "from nnvm.testing.host_device import HostDeviceTarget\n"
        "class MyDev(HostDeviceTarget):\n"
        "    kind = 'mydev'\n"
        f"PLUGIN = Plugin(api_version={PLUGIN_API_VERSION}, targets={{'mydev': lambda: MyDev}})\n",
    )
    load_plugin_module(str(path))
    assert "mydev" in registry().targets
    assert parse_target("mydev -accept=dense").kind == "mydev"


@pytest.mark.parametrize(
    "body,message",
    [
        (
            "raise ImportError('no such hardware')",
            "failed to import: ImportError: no such hardware",
        ),
        ("X = 1", "defines no nnvm Plugin or xDSL Universe"),
        (
            PLUGIN_HEAD + "P = Plugin(api_version=99)",
            f"written for nnvm plugin API version 99; this nnvm speaks version {PLUGIN_API_VERSION}",
        ),
        (
            PLUGIN_HEAD + f"P = Plugin(api_version={PLUGIN_API_VERSION}, "
            "passes={'fuse': lazy_pass('nnvm.passes.fuse', 'FuseOpsPass')})",
            "pass 'fuse' is defined twice: by 'nnvm'",
        ),
        (
            PLUGIN_HEAD + f"P = Plugin(api_version={PLUGIN_API_VERSION}, "
            "llvm_conversions={'cse': 'sometime'})",
            "LLVM conversion stages",
        ),
    ],
)
def test_bad_plugins_are_user_errors(tmp_path: Path, body: str, message: str) -> None:
    path = _write(tmp_path, "bad", body + "\n")
    before = set(registry().passes)
    with pytest.raises(UserError, match=message.replace("(", r"\(").replace(")", r"\)")):
        load_plugin_module(str(path))
    assert set(registry().passes) == before, "a refused plugin registers nothing"


def test_missing_plugin_module_is_a_user_error() -> None:
    with pytest.raises(UserError, match="no_such_plugin_module"):
        load_plugin_module("no_such_plugin_module")


def test_broken_installed_plugin_is_a_located_cli_error(tmp_path: Path) -> None:
    """An installed entry point whose module does not import: nnvm-opt exits 1, naming it."""
    dist = tmp_path / "broken_plugin-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-plugin\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[nnvm.plugins]\nbroken = broken_plugin_mod:PLUGIN\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    proc = subprocess.run(
        [sys.executable, "-m", "nnvm.tools.opt", "--list-passes"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert (
        "plugin 'broken' (broken_plugin_mod:PLUGIN, entry point nnvm.plugins) failed to import"
        in proc.stderr
    )
    assert "Traceback" not in proc.stderr


def test_plugin_onnx_converter_for_a_custom_domain(tmp_path: Path) -> None:
    """A plugin adds a converter for an op of its own domain; the model then imports and runs."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper

    from nnvm.frontend import from_onnx
    from nnvm.reference import run_reference

    path = _write(
        tmp_path,
        "double_plugin",
        "from nnvm.frontend.onnx.registry import Converter\n"
        "from nnvm.support.plugins import Plugin\n"
        "def double(ctx):\n"
        "    x = ctx.required(0)\n"
        "    return [ctx.emit('nnvm.add', x, x)]\n"
        f"PLUGIN = Plugin(api_version={PLUGIN_API_VERSION}, onnx_converters="
        "{'com.example.Double': lambda: Converter('Double', double, frozenset(), 1)})\n",
    )
    node = helper.make_node("Double", ["x"], ["y"], domain="com.example")
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 18), helper.make_opsetid("com.example", 1)]
    )
    with pytest.raises(UserError, match="com.example.Double"):
        from_onnx(onnx.load_from_string(model.SerializeToString()))
    load_plugin_module(str(path))
    module, params = from_onnx(model)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    (y,) = run_reference(module, params, [x])
    np.testing.assert_array_equal(y, 2 * x)


def test_plugin_cannot_replace_a_builtin_converter(tmp_path: Path) -> None:
    from nnvm.frontend import from_onnx
    from nnvm.testing import onnx_models

    path = _write(
        tmp_path,
        "relu_plugin",
        "from nnvm.support.plugins import Plugin\n"
        f"PLUGIN = Plugin(api_version={PLUGIN_API_VERSION}, onnx_converters="
        "{'Relu': lambda: None})\n",
    )
    load_plugin_module(str(path))
    try:
        with pytest.raises(UserError, match="ONNX converter 'Relu' is defined twice"):
            from_onnx(onnx_models.mlp())
    finally:
        from nnvm.support import plugins

        plugins._loaded_modules[:] = [
            m for m in plugins._loaded_modules if "relu_plugin" not in m[1]
        ]


MINI_PLUGIN = """
from dataclasses import dataclass
from xdsl.dialects.builtin import UnitAttr
from xdsl.ir import Dialect
from xdsl.irdl import IRDLOperation, irdl_op_definition
from xdsl.passes import ModulePass
from xdsl.universe import Universe

@irdl_op_definition
class NopOp(IRDLOperation):
    name = "mini.nop"
    assembly_format = "attr-dict"

@dataclass(frozen=True)
class MarkPass(ModulePass):
    name = "mini-mark"
    def apply(self, ctx, op):
        op.attributes["mini.seen"] = UnitAttr()

UNIVERSE = Universe(
    all_dialects={"mini": lambda: Dialect("mini", [NopOp])},
    all_passes={"mini-mark": lambda: MarkPass},
)
"""


def _nnvm_opt(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "nnvm.tools.opt", *args], input=stdin, capture_output=True, text=True
    )


def test_nnvm_opt_loads_pass_and_dialect_plugins(tmp_path: Path) -> None:
    path = _write(tmp_path, "mini_plugin", MINI_PLUGIN)
    source = "func.func @f() {\n  mini.nop\n  func.return\n}\n"
    unknown = _nnvm_opt("-", stdin=source)
    assert unknown.returncode == 1 and "mini.nop" in unknown.stderr
    ran = _nnvm_opt(f"--load-pass-plugin={path}", "-", "-p", "mini-mark", stdin=source)
    assert ran.returncode == 0, ran.stderr
    assert "mini.seen" in ran.stdout and "mini.nop" in ran.stdout
    parsed = _nnvm_opt(f"--load-dialect-plugin={path}", "-", stdin=source)
    assert parsed.returncode == 0, parsed.stderr
    listed = _nnvm_opt(f"--load-pass-plugin={path}", "--list-passes")
    assert "mini-mark" in listed.stdout


@pytest.mark.parametrize(
    "spec,message",
    [("missing_plugin.py", "no such file"), ("no_such_plugin_mod", "failed to import")],
)
def test_nnvm_opt_bad_plugin_exits_1(tmp_path: Path, spec: str, message: str) -> None:
    proc = _nnvm_opt(f"--load-pass-plugin={tmp_path / spec if spec.endswith('.py') else spec}")
    assert proc.returncode == 1, proc.stderr
    assert message in proc.stderr and "Traceback" not in proc.stderr


def test_pass_takes_a_target_string(tmp_path: Path) -> None:
    """apply-default-schedule{target=...}: a target string a user types, parsed by the seam."""
    source = Path(__file__).resolve().parents[2] / "filecheck" / "te" / "default-schedule.mlir"
    text = source.read_text().split("// -----")[0]
    ok = _nnvm_opt(
        "-", "-p", 'lower-to-te,apply-default-schedule{target="llvm -mcpu=x86-64-v3"}', stdin=text
    )
    assert ok.returncode == 0, ok.stderr
    assert "te.schedule" in ok.stdout
    bad = _nnvm_opt("-", "-p", 'lower-to-te,apply-default-schedule{target="quantum"}', stdin=text)
    assert bad.returncode == 1 and "unknown target 'quantum'" in bad.stderr
