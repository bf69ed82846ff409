"""Gunicorn settings shared by bin/run, the Dockerfile and docker-compose.yml; command-line flags override them.

gthread workers: each process serves WEB_THREADS requests at once and keeps idle keep-alive connections off
its threads, so a crowd of clients waits in the queue instead of being refused (docs/deployment.md has the
measurements behind this choice). WEB_CONCURRENCY (gunicorn's own variable) sets the number of processes:
1 by default, which the embedded default needs (its rate-limit counters live in the process's memory);
with REDIS_URL the counters are shared and a deployment adds processes, about one per core.
WEB_WORKER_CLASS=sync (one process per core) serves the guest paths fastest behind a proxy that buffers
requests and responses, like nginx (docs/deployment.md, "Web server": measured with bench/guest_http.py).
"""

import os

wsgi_app = "eventsaas.wsgi:application"
worker_class = os.environ.get("WEB_WORKER_CLASS", "gthread")
threads = int(os.environ.get("WEB_THREADS", "8"))
# A request that takes longer is stuck: the worker is restarted. Stopping waits this long for running requests.
timeout = 30
graceful_timeout = 20
keepalive = 5
# Requests are logged by the application, one line each with the request id, tenant and user
# (eventsaas/logs.py); gunicorn's own access log would repeat them without that.
accesslog = None
errorlog = "-"
# Gunicorn 27's control socket is for an operator's `gunicornc`; a fixed path in $HOME would collide
# between two servers on one machine.
control_socket_disable = True

_json = os.environ.get("LOG_FORMAT", "json" if os.environ.get("DJANGO_ENV") == "production" else "text") == "json"
if _json:
    # Gunicorn's own lines (start, workers, errors) as JSON like the application's.
    logconfig_dict = {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {
            "json": {
                "()": "pythonjsonlogger.json.JsonFormatter",
                "format": "%(asctime)s %(levelname)s %(name)s %(message)s",
                "rename_fields": {"asctime": "time", "levelname": "level", "name": "logger"},
            }
        },
        "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "json", "stream": "ext://sys.stderr"}},
        "loggers": {"gunicorn.error": {"handlers": ["console"], "level": "INFO", "propagate": False}},
    }
