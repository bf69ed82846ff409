# One image for web, worker and beat; the command differs (see docker-compose.yml).
FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 DJANGO_ENV=production
WORKDIR /app
COPY requirements.txt .
RUN pip install --no-cache-dir -r requirements.txt
COPY . .
# collectstatic needs settings but no database; the key is a throwaway for this step only.
RUN SECRET_KEY=build-only-$(python -c "import secrets;print(secrets.token_urlsafe(48))") ALLOWED_HOSTS=build \
    python manage.py collectstatic --noinput
RUN useradd --system --uid 1000 app && chown -R app /app
USER app
EXPOSE 8000
CMD ["gunicorn", "eventsaas.wsgi:application", "--bind", "0.0.0.0:8000", "--workers", "3", "--access-logfile", "-"]
