# spotsched: every command of the `spotsched` CLI (worker, connector, replay, submit, ...).
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /src
COPY pyproject.toml README.md ./
COPY solver ./solver
COPY evaluation ./evaluation
COPY streams ./streams
COPY connectors ./connectors
RUN pip install . \
    && useradd --system --create-home --home-dir /var/lib/spotsched spotsched

USER spotsched
WORKDIR /var/lib/spotsched
EXPOSE 9100
ENTRYPOINT ["spotsched"]
CMD ["--help"]
