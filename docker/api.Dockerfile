# cuprobe API (and beat): no CUDA, no GPU.
FROM python:3.12-slim

ENV PYTHONUNBUFFERED=1
# bubblewrap: the CPU worker, which runs from this image, sandboxes command jobs (docs/service.md, "The sandbox").
RUN apt-get update && apt-get install -y --no-install-recommends bubblewrap && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY pyproject.toml ./
COPY service service
COPY tasks tasks
COPY probes probes
COPY kernels kernels
COPY suites suites
RUN pip install --no-cache-dir ".[server]"

EXPOSE 8000
ENTRYPOINT ["cuprobe"]
CMD ["serve", "--host", "0.0.0.0", "--port", "8000"]
