"""The README benchmark in one command: the gateway (SQLite, and PostgreSQL + Redis) against LiteLLM's proxy and
the bare fake upstream, JSON and streamed, at 1 to 64 connections, in one run; writes the table into
README.md, the figures to bench/benchmark.json and the plot to bench/benchmark.png.

    make bench-report                      # SQLite only
    BENCH_PG_DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench BENCH_PG_REDIS_URL=redis://127.0.0.1:6379/1 \
      make bench-report                    # SQLite and PostgreSQL + Redis (a scratch database: it is written)
    .venv/bin/python bench/report.py --duration 1 --concurrency 1,4 --out /tmp/smoke --readme /tmp/smoke/README.md
    .venv/bin/python bench/report.py --replot       # redraw bench/benchmark.png and the table from benchmark.json

Processes: the fake upstream (bench/fake_upstream.py) and wrk on core 0; LiteLLM 1.100.5 (one worker, in a
throwaway virtualenv, /tmp/bench-litellm-venv, installed on first use from bench/requirements-litellm.txt) and
each gateway (`python -m gateway_project.serve`, uvloop + httptools, `--workers` 1 by default, every policy on:
bench/policies.py) on core 1. Every target is measured alone (the others idle), one concurrency after the
other, after a 1 s warm-up. Per target and concurrency: requests/s, p50 latency, non-2xx answers, and for the
gateway and LiteLLM their CPU time (user + system, every process and thread of the server) per request.
matplotlib (pinned in requirements-dev.txt) is installed into this virtualenv if it is missing.
"""

from __future__ import annotations

import argparse
import base64
import datetime as dt
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
from loadkit import PY, ROOT, _cpu, free_port, wait_http

LITELLM_VENV = Path(os.environ.get("LL_VENV", "/tmp/bench-litellm-venv"))
README_START, README_END = "<!-- bench-report:start -->", "<!-- bench-report:end -->"


def lua(path: Path, key: str, model: str, stream: bool) -> Path:
    body = json.dumps({"model": model, "input": "Say hello", "stream": stream}, separators=(",", ":"))
    path.write_text(
        'wrk.method="POST"\nwrk.headers["Content-Type"]="application/json"\n'
        f'wrk.headers["Authorization"]="Bearer {key}"\nwrk.body=[[{body}]]\n'
    )
    return path


def _ms(value: str) -> float:
    """wrk's "512.00us", "1.23ms", "1.02s" or "2.00m" in milliseconds."""
    number, unit = re.fullmatch(r"([\d.]+)([a-z]+)", value).groups()
    return float(number) * {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60_000.0}[unit]


def wrk(url: str, script: Path, connections: int, seconds: int) -> dict:
    command = [*_cpu(0), "wrk", "-t1", f"-c{connections}", f"-d{seconds}s", "-s", str(script), "--latency", url]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    out = done.stdout
    if "requests in" not in out:
        print(f"wrk failed: {done.stdout.strip()} {done.stderr.strip()}", file=sys.stderr)
    requests = re.search(r"(\d+) requests in", out)
    rps = re.search(r"Requests/sec:\s+([\d.]+)", out)
    p50 = re.search(r"^\s+50%\s+(\S+)", out, re.M)
    bad = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    errors = re.search(r"Socket errors: (.*)", out)
    return {
        "requests": int(requests.group(1)) if requests else 0,
        "rps": float(rps.group(1)) if rps else 0.0,
        "p50_ms": _ms(p50.group(1)) if p50 else None,
        "non2xx": int(bad.group(1)) if bad else 0,
        "socket_errors": errors.group(1).strip() if errors else "",
    }


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a server process and its children (uvicorn's workers, LiteLLM's launcher)."""
    total = 0.0
    try:
        process = psutil.Process(pid)
        for proc in [process, *process.children(recursive=True)]:
            times = proc.cpu_times()
            total += times.user + times.system
    except psutil.NoSuchProcess:
        pass
    return total


class Target:
    def __init__(self, name: str, url: str, key: str, model: str, process: subprocess.Popen | None) -> None:
        self.name, self.url, self.key, self.model, self.process = name, url, key, model, process


def start(command: list[str], env: dict, log: Path, core: int | None, cwd: Path = ROOT) -> subprocess.Popen:
    return subprocess.Popen([*_cpu(core), *command], env=env, cwd=cwd, stdout=log.open("w"), stderr=subprocess.STDOUT)


def ensure_matplotlib() -> None:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        pin = next(
            line.strip()
            for line in (ROOT / "requirements-dev.txt").read_text().splitlines()
            if line.startswith("matplotlib==")
        )
        subprocess.run([PY, "-m", "pip", "install", "-q", pin], check=True)


def ensure_litellm() -> Path:
    litellm = LITELLM_VENV / "bin" / "litellm"
    if not litellm.exists():
        subprocess.run([sys.executable, "-m", "venv", str(LITELLM_VENV)], check=True)
        requirements = ROOT / "bench" / "requirements-litellm.txt"
        subprocess.run([str(LITELLM_VENV / "bin" / "pip"), "install", "-q", "-r", str(requirements)], check=True)
    return litellm


def start_gateway(name: str, database_url: str, redis_url: str, upstream_port: int, workers: int, tmp: Path) -> Target:
    env = dict(
        os.environ,
        DATABASE_URL=database_url,
        REDIS_URL=redis_url,
        DJANGO_DEBUG="false",
        DJANGO_SECRET_KEY="bench-only-secret-key-0123456789abcdefghijklmnop",
        GATEWAY_BYOK_ENCRYPTION_KEYS=base64.urlsafe_b64encode(os.urandom(32)).decode(),
        GATEWAY_LOG_LEVEL="WARNING",
        GATEWAY_DRAIN_SECONDS="0",  # no balancer in front: SIGTERM stops at once
        BENCH_KEY="sk-fake",  # the upstream key, the same for LiteLLM (bench/litellm.yaml)
        UPSTREAM_PORT=str(upstream_port),
        BENCH_API_FORMAT="openai-responses",
    )
    prepared = subprocess.run([PY, "bench/prepare.py"], env=env, cwd=ROOT, check=True, capture_output=True, text=True)
    key = prepared.stdout.strip().splitlines()[-1]
    subprocess.run([PY, "bench/policies.py", key], env=env, cwd=ROOT, check=True, capture_output=True)
    port = free_port()
    command = [PY, "-m", "gateway_project.serve", "gateway_project.asgi:application", "--host", "127.0.0.1"]
    command += ["--port", str(port), "--workers", str(workers), "--loop", "uvloop", "--http", "httptools"]
    command += ["--lifespan", "on", "--no-access-log", "--log-level", "warning", "--no-server-header"]
    process = start(command, env, tmp / f"{name}.log", 1)
    url = f"http://127.0.0.1:{port}/api/v1/responses"
    wait_http(url, process, timeout=120)
    return Target(name, url, key, "bench/fake", process)


def measure(targets: list[Target], concurrency: list[int], seconds: float, tmp: Path) -> dict:
    results: dict = {}
    for stream in (False, True):
        for target in targets:
            script = lua(tmp / f"{target.name}-{stream}.lua", target.key, target.model, stream)
            wrk(target.url, script, 1, 1)  # warm-up
            rows = []
            for connections in concurrency:
                before = cpu_seconds(target.process.pid) if target.process else 0.0
                row = wrk(target.url, script, connections, seconds)
                if target.process and row["requests"]:
                    row["cpu_us_per_request"] = (cpu_seconds(target.process.pid) - before) / row["requests"] * 1e6
                rows.append({"connections": connections, **row})
                print(f"{target.name:18} stream={str(stream).lower():5} c={connections:<3} {row}", flush=True)
            results.setdefault("stream" if stream else "json", {})[target.name] = rows
    return results


def at(rows: list[dict], connections: int) -> dict:
    return next((row for row in rows if row["connections"] == connections), rows[-1])


LABELS = {
    "upstream": "bare fake upstream",
    "litellm": "LiteLLM 1.100.5 proxy",
    "gateway-sqlite": "**gateway**, SQLite",
    "gateway-postgres": "**gateway**, PostgreSQL + Redis",
}


COLORS = {"upstream": "tab:gray", "litellm": "tab:red", "gateway-sqlite": "tab:blue", "gateway-postgres": "tab:green"}


def table(report: dict) -> str:
    """The README table: c=1 p50, added p50, c=16 req/s, ratio to LiteLLM, CPU per request."""
    low, high = 1, 16
    lines = [
        "| target | stream | c=1 p50 ms | added p50 ms | c=16 req/s | c=16 vs LiteLLM | server CPU µs/request (c=16) |",
        "|---|---|---|---|---|---|---|",
    ]
    for kind in ("json", "stream"):
        results = report["results"][kind]
        upstream = at(results["upstream"], low)["p50_ms"] or 0.0
        litellm_rps = at(results["litellm"], high)["rps"] if "litellm" in results else 0.0
        for name, rows in results.items():
            first, busy = at(rows, low), at(rows, high)
            added = f"{first['p50_ms'] - upstream:.2f}" if name != "upstream" and first["p50_ms"] else ""
            ratio = f"{busy['rps'] / litellm_rps:.2f}x" if name.startswith("gateway") and litellm_rps else ""
            cpu = f"{busy['cpu_us_per_request']:,.0f}" if "cpu_us_per_request" in busy else ""
            p50 = f"{first['p50_ms']:.2f}" if first["p50_ms"] is not None else "-"
            lines.append(
                f"| {LABELS.get(name, name)} | {'true' if kind == 'stream' else 'false'} | {p50} | "
                f"{'**' + added + '**' if added and name.startswith('gateway') else added} | {busy['rps']:,.1f} | "
                f"{'**' + ratio + '**' if ratio else ''} | {cpu} |"
            )
    return "\n".join(lines)


def plot(report: dict, path: Path) -> None:
    ensure_matplotlib()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(2, 2, figsize=(11, 7.5))
    for row, kind in enumerate(("json", "stream")):
        results = report["results"][kind]
        upstream = {r["connections"]: r["p50_ms"] or 0.0 for r in results["upstream"]}
        for name, rows in results.items():
            x = [r["connections"] for r in rows]
            label = LABELS.get(name, name).replace("**", "")
            if name != "upstream":
                added = [max((r["p50_ms"] or 0.0) - upstream.get(r["connections"], 0.0), 0.01) for r in rows]
                axes[row][0].plot(x, added, marker="o", label=label, color=COLORS.get(name))
            axes[row][1].plot(x, [r["rps"] for r in rows], marker="o", label=label, color=COLORS.get(name))
        title = "JSON" if kind == "json" else "streamed (20 chunks)"
        axes[row][0].set(title=f"added p50 latency, {title}", xlabel="connections", ylabel="ms (log)")
        axes[row][1].set(title=f"requests/s, {title}", xlabel="connections", ylabel="req/s (log)")
        for axis in axes[row]:
            axis.set_xscale("log", base=2)
            axis.set_yscale("log")
            axis.grid(True, which="both", alpha=0.3)
            axis.legend(fontsize=8)
    figure.suptitle(f"Gateway vs LiteLLM vs bare upstream, one worker on one core, every policy on ({report['date']})")
    figure.tight_layout()
    figure.savefig(path, dpi=110)


def write_readme(readme: Path, report: dict, image: str) -> None:
    text = readme.read_text()
    smoke = (
        "**A smoke run** (under 5 s per point, or other processes busy on the machine): it shows what the command "
        "produces; its figures are not the benchmark.\n\n"
        if report["duration"] < 5 or float(report["load_before"]) > 1.5
        else ""
    )
    block = (
        f"{README_START}\n{smoke}`make bench-report` at {report['date']} (load average {report['load_before']} "
        f"before the run; wrk {report['duration']} s per point; every policy on; the gateway with {report['workers']} "
        f"worker(s)):\n\n{table(report)}\n\n![benchmark]({image})\n{README_END}"
    )
    if README_START in text:
        text = re.sub(re.escape(README_START) + r".*?" + re.escape(README_END), lambda _: block, text, flags=re.S)
    else:
        text = text.replace("## Benchmark\n", f"## Benchmark\n\n{block}\n", 1)
    readme.write_text(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=int, default=int(os.environ.get("DUR", 5)), help="seconds per point")
    parser.add_argument("--concurrency", default="1,2,4,8,16,32,64")
    parser.add_argument("--workers", type=int, default=1, help="uvicorn workers of each gateway")
    parser.add_argument("--out", type=Path, default=ROOT / "bench", help="where benchmark.json / .png go")
    parser.add_argument("--readme", type=Path, default=ROOT / "README.md")
    parser.add_argument("--no-litellm", action="store_true")
    parser.add_argument("--replot", action="store_true", help="only redraw the plot and table from benchmark.json")
    args = parser.parse_args()
    if args.replot:
        report = json.loads((args.out / "benchmark.json").read_text())
        plot(report, args.out / "benchmark.png")
        write_readme(args.readme, report, os.path.relpath(args.out / "benchmark.png", args.readme.parent))
        return
    concurrency = [int(c) for c in args.concurrency.split(",")]
    args.out.mkdir(parents=True, exist_ok=True)
    ensure_matplotlib()
    tmp = Path(tempfile.mkdtemp(prefix="bench-report-"))
    upstream_port = free_port()
    processes: list[subprocess.Popen] = []
    try:
        env = dict(os.environ, BENCH_KEY="sk-fake")
        upstream = start([PY, "bench/fake_upstream.py", str(upstream_port)], env, tmp / "upstream.log", 0)
        processes.append(upstream)
        wait_http(f"http://127.0.0.1:{upstream_port}/v1/models", upstream)
        targets = [Target("upstream", f"http://127.0.0.1:{upstream_port}/v1/responses", "x", "fake-model", None)]
        if not args.no_litellm:
            litellm, port = ensure_litellm(), free_port()
            config = (ROOT / "bench" / "litellm.yaml").read_text().replace("UPSTREAM_PORT", str(upstream_port))
            (tmp / "litellm.yaml").write_text(config)
            clean = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
            command = [str(litellm), "--config", str(tmp / "litellm.yaml"), "--host", "127.0.0.1"]
            command += ["--port", str(port), "--num_workers", "1"]
            process = start(command, clean, tmp / "litellm.log", 1, cwd=tmp)
            processes.append(process)
            wait_http(f"http://127.0.0.1:{port}/v1/responses", process, timeout=180)
            targets.append(
                Target("litellm", f"http://127.0.0.1:{port}/v1/responses", "sk-bench", "fake-model", process)
            )
        sqlite = f"sqlite:///{tmp}/gateway.sqlite3"
        gateway = start_gateway("gateway-sqlite", sqlite, "", upstream_port, args.workers, tmp)
        processes.append(gateway.process)
        targets.append(gateway)
        if os.environ.get("BENCH_PG_DATABASE_URL"):
            pg_url, redis_url = os.environ["BENCH_PG_DATABASE_URL"], os.environ.get("BENCH_PG_REDIS_URL", "")
            gateway = start_gateway("gateway-postgres", pg_url, redis_url, upstream_port, args.workers, tmp)
            processes.append(gateway.process)
            targets.append(gateway)
        load_before = f"{os.getloadavg()[0]:.1f}"
        results = measure(targets, concurrency, args.duration, tmp)
        report = {
            "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
            "load_before": load_before,
            "load_after": f"{os.getloadavg()[0]:.1f}",
            "duration": args.duration,
            "workers": args.workers,
            "concurrency": concurrency,
            "results": results,
        }
    finally:
        for process in reversed(processes):
            if process.poll() is None:
                process.terminate()
                try:
                    process.wait(15)
                except subprocess.TimeoutExpired:
                    process.kill()
    (args.out / "benchmark.json").write_text(json.dumps(report, indent=1) + "\n")
    plot(report, args.out / "benchmark.png")
    image = os.path.relpath(args.out / "benchmark.png", args.readme.parent)
    write_readme(args.readme, report, image)
    print(table(report))
    print(f"wrote {args.out / 'benchmark.json'}, {args.out / 'benchmark.png'} and the table in {args.readme}")


if __name__ == "__main__":
    main()
