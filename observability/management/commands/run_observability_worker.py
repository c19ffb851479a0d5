"""`python manage.py run_observability_worker`: deliver queued traces to observability destinations.

Runs until SIGTERM or SIGINT, then finishes the deliveries in flight and exits 0. Several workers may run at
once (on several machines too): rows are claimed with row locks, never delivered twice.
"""

from __future__ import annotations

import signal

from django.core.management.base import BaseCommand

from observability.worker import Worker, WorkerConfig


class Command(BaseCommand):
    help = "Deliver the observability outbox to destinations (until SIGTERM/SIGINT)."

    def add_arguments(self, parser):
        parser.add_argument("--concurrency", type=int, help="Deliveries in flight (GATEWAY_OBSERVABILITY_CONCURRENCY)")
        parser.add_argument("--max-attempts", type=int, help="Attempts before a row is dead")
        parser.add_argument("--poll-interval", type=float, help="Seconds between polls when idle")
        parser.add_argument("--once", action="store_true", help="Deliver what is due now, then exit")

    def handle(self, *args, **options):
        config = WorkerConfig.from_settings(
            concurrency=options.get("concurrency"),
            max_attempts=options.get("max_attempts"),
            poll_interval=options.get("poll_interval"),
        )
        worker = Worker(config)
        try:
            if options.get("once"):
                count = worker.drain()
                self.stdout.write(f"processed {count} outbox rows")
                return
            previous = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}

            def request_stop(signum, frame):
                self.stdout.write(f"received signal {signum}, finishing deliveries in flight")
                worker.stop.set()

            for sig in previous:
                signal.signal(sig, request_stop)
            try:
                worker.run()
            finally:
                for sig, handler in previous.items():
                    signal.signal(sig, handler)
        finally:
            worker.close()
        self.stdout.write("observability worker stopped")
