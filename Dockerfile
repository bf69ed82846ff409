# One image for web, worker and beat; the command differs (see docker-compose.yml).
FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 DJANGO_ENV=production
WORKDIR /app
COPY requirements.txt .
# The lock alone, every file checked against its hash (README "Dependencies").
RUN pip install --no-cache-dir --require-hashes -r requirements.txt
COPY . .
# collectstatic needs settings but no database; the key, the sender and the address are throwaways for this step
# only (production settings refuse to load without them: eventsaas/settings.py).
RUN SECRET_KEY=build-only-$(python -c "import secrets;print(secrets.token_urlsafe(48))") ALLOWED_HOSTS=build \
    DEFAULT_FROM_EMAIL=build-only@example.org SITE_URL=https://build.invalid python manage.py collectstatic --noinput
RUN useradd --system --uid 1000 app && chown -R app /app
USER app
EXPOSE 8000
# Web processes: about one per core (gunicorn.conf.py: gthread workers, WEB_THREADS each).
ENV WEB_CONCURRENCY=2
# The process is up; docker-compose.yml's healthcheck asks /readyz (database, migrations, broker).
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s \
    CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=4)"
CMD ["gunicorn", "--config", "gunicorn.conf.py", "--bind", "0.0.0.0:8000"]
