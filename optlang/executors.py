"""Where comparison runs execute: in this process, in local worker processes, or on a Dask cluster.

A `Job` is one (model path, params, data, backend, seed, time limit, device, options) solve; `execute`
runs it through the public API and returns the Result as a JSON-able dict. Executors stream
(job, result dict) pairs back as they finish; a run that raises, or whose worker dies, becomes an
error row (a Result with status "error" and the reason in info["error"]) and never loses the others.
Nothing here renders or summarizes; compare.py and bench.py do.
"""

from __future__ import annotations

import logging
import os
import shutil
import sys
import tempfile
import time
import traceback
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import asdict, dataclass, field
from typing import Any

log = logging.getLogger("optlang")

JobFn = Callable[["Job"], dict[str, Any]]


@dataclass(frozen=True)
class Job:
    """One solve to run: everything a fresh process needs to load the model and call solve()."""

    model: str  # path of the .opt file
    backend: str
    seed: int = 0
    time_limit: float | None = None
    device: str = "auto"
    params: dict[str, Any] = field(default_factory=dict)
    data: dict[str, str] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)
    repeat: int = 0

    @property
    def key(self) -> tuple[str, str, int]:
        """(model, backend, seed): what a resumable results file records as done."""
        return (self.model, self.backend, self.seed)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @staticmethod
    def from_dict(d: dict[str, Any]) -> Job:
        return Job(**{k: d[k] for k in Job.__dataclass_fields__ if k in d})


def error_result(job: Job, message: str, kind: str = "", detail: str = "") -> dict[str, Any]:
    """The Result dict of a run that produced nothing: status error, the reason kept in info."""
    info: dict[str, Any] = {"error": message}
    if detail:
        info["traceback"] = detail
    return {
        "status": "error",
        "objective": None,
        "bound": None,
        "gap": None,
        "values": {},
        "backend": job.backend,
        "plan": "",
        "timing": {},
        "history": [],
        "checks": [],
        "kind": kind,
        "sense": "minimize",
        "iterations": 0,
        "device": job.device,
        "seed": job.seed,
        "model": job.model,
        "backend_objective": None,
        "info": info,
    }


def execute(job: Job) -> dict[str, Any]:
    """Load the model and solve it with the job's backend; any exception becomes an error row."""
    t0 = time.perf_counter()
    try:
        import optlang

        model = optlang.load(job.model, params=dict(job.params), data=dict(job.data))
    except Exception as e:  # a model that does not load is an error row, not a crash of the comparison
        return error_result(job, f"loading the model failed: {_one_line(e)}", detail=traceback.format_exc())
    try:
        result = model.solve(
            backend=job.backend, time_limit=job.time_limit, seed=job.seed, device=job.device, options=dict(job.options)
        )
        d = result.to_dict()
    except Exception as e:
        return error_result(
            job, f"{type(e).__name__}: {_one_line(e)}", kind=getattr(model, "kind", ""), detail=traceback.format_exc()
        )
    d["model"] = d.get("model") or job.model
    d.setdefault("timing", {}).setdefault("total", time.perf_counter() - t0)
    d.setdefault("info", {})["repeat"] = job.repeat
    return d


def _one_line(e: BaseException) -> str:
    text = getattr(e, "message", None) or str(e) or type(e).__name__
    return " ".join(str(text).split())[:500]


# ----------------------------------------------------------------------------- executors
class Executor(ABC):
    """Runs jobs and yields (job, result dict) pairs in completion order."""

    name = ""

    @abstractmethod
    def run(self, jobs: Iterable[Job], fn: JobFn = execute) -> Iterator[tuple[Job, dict[str, Any]]]:
        """Run every job; yield each as it finishes. Never raises for a failing job."""

    def close(self) -> None:  # noqa: B027 - optional hook, a no-op by default
        """Release workers/connections (a no-op by default)."""


class InlineExecutor(Executor):
    """Runs jobs one after the other in this process (debugging, tests, timing without IPC)."""

    name = "inline"

    def run(self, jobs: Iterable[Job], fn: JobFn = execute) -> Iterator[tuple[Job, dict[str, Any]]]:
        for job in jobs:
            try:
                yield job, fn(job)
            except Exception as e:
                yield job, error_result(job, f"{type(e).__name__}: {_one_line(e)}", detail=traceback.format_exc())


def _init_worker(threads: int) -> None:
    """Cap BLAS/torch threads in a worker so parallel runs do not oversubscribe the CPU."""
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[var] = str(threads)
    torch = sys.modules.get("torch")  # not imported yet in a fresh worker: the env vars above suffice
    if torch is not None:
        torch.set_num_threads(threads)


def _run_marked(fn: JobFn, job: Job, marker: str) -> dict[str, Any]:
    """Run fn(job) in a worker after leaving a marker file: the parent then knows the job had started."""
    with open(marker, "w"):
        pass
    return fn(job)


class LocalExecutor(Executor):
    """A pool of spawned worker processes on this machine (spawn: safe with torch and CUDA).

    A worker that dies (segfault, out-of-memory kill) breaks a ProcessPoolExecutor for every job
    still in it. Jobs that had not started are rerun in a fresh pool; jobs that had started (the
    culprit and at most `workers - 1` bystanders, known by a marker file) are rerun each alone in a
    single-worker pool, so that only a job that kills its worker again becomes an error row.
    """

    name = "local"

    def __init__(self, workers: int = 1, threads_per_worker: int | None = None) -> None:
        self.workers = max(1, int(workers))
        cpus = os.cpu_count() or 1
        self.threads = threads_per_worker or max(1, cpus // self.workers)

    def _pool(self, n: int) -> ProcessPoolExecutor:
        import multiprocessing

        return ProcessPoolExecutor(
            max_workers=n,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_init_worker,
            initargs=(self.threads,),
        )

    def run(self, jobs: Iterable[Job], fn: JobFn = execute) -> Iterator[tuple[Job, dict[str, Any]]]:
        pending = list(jobs)
        while pending:  # each broken round loses at least its culprit to `started`, so this ends
            started: list[Job] = []
            queued: list[Job] = []
            yield from self._round(pending, fn, started, queued, isolated=False)
            for job in started:
                yield from self._round([job], fn, [], [], isolated=True)
            pending = queued

    def _round(
        self, jobs: list[Job], fn: JobFn, started: list[Job], queued: list[Job], isolated: bool
    ) -> Iterator[tuple[Job, dict[str, Any]]]:
        pool = self._pool(min(self.workers, len(jobs)))
        markers = tempfile.mkdtemp(prefix="optlang-jobs-")
        try:
            futures = {
                pool.submit(_run_marked, fn, job, os.path.join(markers, str(i))): i for i, job in enumerate(jobs)
            }
            remaining = set(futures)
            while remaining:
                done, remaining = wait(remaining, return_when=FIRST_COMPLETED)
                for fut in sorted(done, key=futures.__getitem__):
                    i = futures[fut]
                    job = jobs[i]
                    try:
                        yield job, fut.result()
                    except BrokenProcessPool:
                        if isolated:
                            yield (
                                job,
                                error_result(
                                    job,
                                    "the worker process died while running this job (crash, out of memory or killed)",
                                ),
                            )
                        elif os.path.exists(os.path.join(markers, str(i))):
                            started.append(job)
                        else:
                            queued.append(job)
                    except Exception as e:  # e.g. the result could not be pickled back
                        yield job, error_result(job, f"{type(e).__name__}: {_one_line(e)}")
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
            shutil.rmtree(markers, ignore_errors=True)


class DaskExecutor(Executor):
    """Jobs as tasks on a dask.distributed cluster; results stream back as they complete.

    `scheduler` is an address ("tcp://host:8786") or an existing Client/LocalCluster. Tasks are
    impure (every job is a fresh solve). A task whose workers keep dying ends as KilledWorker,
    which becomes that job's error row.
    """

    name = "dask"

    def __init__(self, scheduler: Any, own_cluster: bool = False) -> None:
        self.scheduler = scheduler
        self._client: Any = None
        self._own = False
        self._own_cluster = own_cluster  # a cluster make_executor started: close() shuts it down

    def client(self) -> Any:
        if self._client is None:
            try:
                from distributed import Client
            except ImportError as e:  # dask is an optional extra
                from optlang.errors import OptionError

                raise OptionError(
                    "executor",
                    "the dask executor needs the 'distributed' package",
                    hint="pip install 'optlang-dsl[dask]'",
                ) from e
            if isinstance(self.scheduler, Client):
                self._client = self.scheduler
            elif hasattr(self.scheduler, "scheduler_address"):  # a LocalCluster / SpecCluster
                self._client, self._own = Client(self.scheduler), True
            else:
                self._client, self._own = Client(str(self.scheduler)), True
        return self._client

    def run(self, jobs: Iterable[Job], fn: JobFn = execute) -> Iterator[tuple[Job, dict[str, Any]]]:
        from distributed import as_completed

        jobs = list(jobs)
        if not jobs:
            return
        client = self.client()
        futures = client.map(fn, jobs, pure=False)
        owner = {f.key: job for f, job in zip(futures, jobs, strict=True)}
        for fut in as_completed(futures):
            job = owner[fut.key]
            try:
                yield job, fut.result()
            except Exception as e:
                yield job, error_result(job, f"{type(e).__name__}: {_one_line(e)}")
            finally:
                fut.release()

    def close(self) -> None:
        if self._client is not None and self._own:
            self._client.close()
        self._client = None
        if self._own_cluster:
            self.scheduler.close()
            self._own_cluster = False


def make_executor(name: str = "local", scheduler: Any = None, workers: int = 1) -> Executor:
    """The executor for a CLI/API choice; a scheduler address implies dask."""
    if scheduler is not None and name in ("local", "dask"):
        return DaskExecutor(scheduler)
    if name == "dask":
        try:
            from distributed import LocalCluster
        except ImportError as e:  # dask is an optional extra
            from optlang.errors import OptionError

            raise OptionError(
                "executor", "the dask executor needs the 'distributed' package", hint="pip install 'optlang-dsl[dask]'"
            ) from e

        # No address given: a throwaway cluster on this machine (one thread per worker process).
        cluster = LocalCluster(n_workers=max(1, workers), threads_per_worker=1, processes=True, dashboard_address=None)
        return DaskExecutor(cluster, own_cluster=True)
    if name == "inline":
        return InlineExecutor()
    if name == "local":
        return LocalExecutor(workers=workers)
    from optlang.errors import OptionError

    raise OptionError("executor", f"unknown executor '{name}'", hint="use local, dask or inline")


def stream(
    executor: Executor,
    jobs: list[Job],
    fn: JobFn = execute,
    progress: bool = False,
    description: str = "solving",
    on_result: Callable[[Job, dict[str, Any]], None] | None = None,
) -> list[tuple[Job, dict[str, Any]]]:
    """Run jobs on `executor`, calling `on_result` as each finishes, with an optional rich progress bar."""
    out: list[tuple[Job, dict[str, Any]]] = []

    def consume(tick: Callable[[Job, dict[str, Any]], None]) -> None:
        for job, res in executor.run(jobs, fn):
            out.append((job, res))
            if on_result is not None:
                on_result(job, res)
            tick(job, res)

    if not progress or not jobs:
        consume(lambda j, r: None)
        return out
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.fields[last]}"),
        transient=False,
        console=Console(stderr=True),  # stdout is for the table or the machine-readable report
    ) as bar:
        task = bar.add_task(description, total=len(jobs), last="")

        def tick(job: Job, res: dict[str, Any]) -> None:
            obj = res.get("objective")
            last = f"{job.backend} seed {job.seed}: {res.get('status')}" + (
                f" {obj:.6g}" if isinstance(obj, (int, float)) else ""
            )
            bar.update(task, advance=1, last=last)

        consume(tick)
    return out
