"""The Target seam: one object per compilation target, parsed from a target string by its first
word (`llvm -mcpu=...`, a plugin's name), carrying its capabilities, kernel pipeline, default
schedules, and emit / link / load. Passes and the build driver only talk to this interface."""

from __future__ import annotations

import shlex
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from nnvm.support.errors import UserError

if TYPE_CHECKING:
    from xdsl.dialects import func
    from xdsl.passes import ModulePass

    from nnvm.support.executor_graph import ExecutorGraph


@dataclass(frozen=True)
class Capabilities:
    """What a target's code can do, read by passes instead of target names."""

    device_kind: str
    """'cpu' for the host; a device target names its kind ('gpu', 'accel', 'test', ...)."""
    vector_bits: int = 0
    """Widest float vector registers the code may use (0: no vectors)."""
    threads: bool = False
    """Parallel loops run on a thread pool."""
    bind: bool = False
    """te.bind (GPU block/thread axes) is legal."""
    tensorize: bool = False
    """te.tensorize (hardware intrinsics) is legal."""
    memory_scopes: tuple[str, ...] = ("global",)
    """Where buffers may live (cache_read/cache_write scopes)."""
    panel: int = 0
    """Column-panel width its matmul register tiles stream a packed right operand in (0: the
    target does not pack)."""


class DeviceRuntime(ABC):
    """A device's buffers and kernel launches, driven by the runtimes (Python here; the C entry
    point calls the same five operations through `nnvm_device_api`)."""

    @abstractmethod
    def alloc(self, nbytes: int) -> int:
        """A device buffer of `nbytes`; returns its handle (non-zero)."""

    @abstractmethod
    def free(self, handle: int) -> None: ...

    @abstractmethod
    def copy_to_device(self, handle: int, host: memoryview) -> None: ...

    @abstractmethod
    def copy_from_device(self, host: memoryview, handle: int) -> None: ...

    @abstractmethod
    def launch(self, kernel: str, handles: Sequence[int]) -> None:
        """Run `kernel` (its inputs, then its outputs) over device buffers."""


class Target(ABC):
    """A compilation target. Subclasses set `kind` (the target string's first word) and
    `aliases`, and implement `parse`; host targets also implement `link` and `load`."""

    kind: ClassVar[str]
    aliases: ClassVar[tuple[str, ...]] = ()
    is_host: ClassVar[bool] = False
    has_cycle_model: ClassVar[bool] = False
    """True when `simulate_kernel` times this target's kernels (the tuner measures there)."""
    kernel_format: ClassVar[str] = "object"
    """'object': emit_kernel gives a relocatable object the host links in (its kernels are then
    host-callable symbols); anything else: a blob embedded in the library as data."""

    @classmethod
    @abstractmethod
    def parse(cls, spec: str, options: list[str]) -> Target:
        """Build the target from the words after the first; raise UserError on bad options."""

    # -- what it is -------------------------------------------------------------------------

    @property
    @abstractmethod
    def capabilities(self) -> Capabilities: ...

    @property
    @abstractmethod
    def description(self) -> str:
        """One line naming everything generated code depends on (cache keys, library records)."""

    @property
    def vector_bits(self) -> int:
        return self.capabilities.vector_bits

    # -- graph level ------------------------------------------------------------------------

    def pass_options(self, pass_name: str) -> dict[str, Any]:
        """Options this target sets on a graph pass of the build (e.g. a layout block)."""
        return {}

    def graph_passes(self) -> Mapping[str, Sequence[ModulePass]]:
        """Graph passes a device target adds to a build that places kernels on it, keyed by
        insertion point as build(passes=...) takes them ('start', 'before:fuse', ...): an
        accelerator's partitioning, which makes what it runs one kernel (as TVM's
        partition_for_<backend>). They run before the user's passes at the same point."""
        return {}

    def tensor_intrinsics(self) -> Mapping[str, Any]:
        """The tensor intrinsics `te.tensorize` may name on this target (by name), each a te
        pattern and the target's code for it (a TensorIntrinsic of nnvm.dialects.te.intrinsics)."""
        return {}

    def lane_permutes(self) -> Mapping[int, str]:
        """LLVM intrinsics that permute the f32 lanes of a vector by a vector of lane indices
        known only at run time, by lane count (x86's vpermps): a vectorized load whose lanes
        read positions base + pattern[lane] of one vector, the base a loop's value, takes one.
        Without one, such a load broadcasts each position it reads and blends them."""
        return {}

    def accepts(self, fn: func.FuncOp) -> str | None:
        """None when this target can run the fused kernel `fn`; else why not (placement)."""
        return None

    # -- kernels ----------------------------------------------------------------------------

    @abstractmethod
    def kernel_passes(self) -> list[ModulePass]:
        """The passes from one fused graph function to what `emit_kernel` takes."""

    def default_schedule(self, fn: func.FuncOp, **knobs: Any) -> Any:
        """The default `te.schedule` of a te kernel (None: leave it unscheduled); `knobs` are
        the target's own tuning options (min_parallel_work on the CPU)."""
        return None

    def configured_schedule(self, fn: func.FuncOp, config: Any) -> Any:
        """The schedule its templates give `fn` with the knob values a `ConfigSpace`
        answers (nnvm.support.config_space), which records the knobs asked: a tuner's search
        space. None: this target has no tunable templates, or they do not apply to `fn`."""
        return None

    def te_kernel(self, fn: func.FuncOp) -> func.FuncOp | None:
        """The te kernel (unscheduled) of a graph kernel this device runs, for a device whose
        kernels lower through te schedules it builds itself (the accelerator's layers); None:
        the kernel goes through lower-to-te like the host's, or is not tunable."""
        return None

    def tuning_passes(self, log_path: str) -> list[ModulePass]:
        """Passes that give this device's kernels (graph level, before `kernel_passes`) the
        schedules a tuning log holds, for build(tuning_log=...); the host's kernels take theirs
        through apply-tuning-log on their te form. Default: none."""
        return []

    def simulate_kernel(self, fn: func.FuncOp, check: bool) -> tuple[float, str, str]:
        """For a target measured on a cycle model instead of a device: the simulated seconds
        of a scheduled te kernel, an error code ('ok'; 'build' when the schedule does not
        lower, 'run' when the program fails, 'wrong' when `check` finds its output differs
        from the reference) and a detail."""
        raise UserError(f"target '{self.kind}' has no cycle model to measure kernels on")

    def check_schedule(self, state: Any) -> None:
        """Reject schedules this target cannot lower (a DiagnosticError at the primitive):
        te.bind / te.tensorize where the capabilities do not allow them, a cache_read into a
        memory scope (te.set_scope) the target does not declare (the CPU has only 'global')."""
        from nnvm.support.diagnostics import DiagnosticError

        scopes = self.capabilities.memory_scopes
        for sched in state.schedule_ops:
            for prim in sched.primitives:
                # te.cache_read's and te.set_scope's (support is below te)
                scope = getattr(prim, "scope_name", None)
                if scope not in (None, *scopes):
                    raise DiagnosticError(
                        prim,
                        f"{prim.name}: target '{self.kind}' has no memory scope "
                        f"'{scope}' (it has {', '.join(scopes)})",
                    )
        for stage in state.stages:
            for v in stage.leaves:
                ann = v.annotation or ""
                if ann.startswith("bind") and not self.capabilities.bind:
                    self._illegal(v, "te.bind")
                if ann.startswith("tensorize") and not self.capabilities.tensorize:
                    self._illegal(v, "te.tensorize")

    def _illegal(self, var: Any, what: str) -> None:
        from nnvm.support.diagnostics import DiagnosticError

        raise DiagnosticError(
            var.annotated_by,
            f"{what} is not supported by target '{self.kind}' (it needs a GPU or accelerator "
            "target that declares it)",
        )

    @abstractmethod
    def emit_kernel(self, module: Any, name: str) -> bytes:
        """The lowered kernel module -> this target's artifact (an object, a program blob)."""

    # -- host targets -----------------------------------------------------------------------

    def link(
        self,
        graph: ExecutorGraph,
        objects: list[bytes],
        out: Path,
        blobs: dict[str, bytes],
        libraries: Sequence[str] = (),
    ) -> Path:
        """Host kernels' objects + the entry point + device kernels' blobs -> one library."""
        raise UserError(f"target '{self.kind}' is a device target; it cannot be the host")

    def load(self, path: Path) -> Any:
        raise UserError(f"target '{self.kind}' is a device target; it cannot be the host")

    # -- device targets ---------------------------------------------------------------------

    def runtime(self, lib: Any) -> DeviceRuntime:
        """The device's runtime for a loaded library (which holds this device's blobs)."""
        raise UserError(f"target '{self.kind}' has no device runtime")

    def __str__(self) -> str:
        return self.description


def target_classes() -> dict[str, type[Target]]:
    """Every target by first word (and alias): nnvm's own and the plugins'."""
    from nnvm.support.plugins import registry

    found: dict[str, type[Target]] = {}
    for kind, (factory, _) in registry().targets.items():
        cls = factory()
        found[kind] = cls
        for alias in cls.aliases:
            found.setdefault(alias, cls)
    return found


def parse_target(spec: str | Target | None) -> Target:
    """A target from its string (`llvm -mcpu=x86-64-v3`, `cuda -arch=sm_90`, a plugin's name);
    None or '' is the host CPU."""
    if isinstance(spec, Target):
        return spec
    if spec is None or not str(spec).strip():
        spec = "llvm"
    if not isinstance(spec, str):
        raise UserError(f"a target is a string or a Target, not {type(spec).__name__}")
    try:
        words = shlex.split(spec)
    except ValueError as err:
        raise UserError(f"bad target string {spec!r}: {err}") from None
    classes = target_classes()
    cls = classes.get(words[0])
    if cls is None:
        known = ", ".join(sorted(classes))
        raise UserError(f"unknown target {words[0]!r} in {spec!r}; known targets: {known}")
    return cls.parse(spec, words[1:])
