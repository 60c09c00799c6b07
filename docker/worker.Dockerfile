# cuprobe GPU worker: CUDA base (driver from the host via the NVIDIA container toolkit), pycuda,
# and the pinned compute-sanitizer from PyPI (nvidia-cuda-sanitizer-api, via the `gpu` extra).
FROM nvidia/cuda:12.8.1-devel-ubuntu24.04

ENV DEBIAN_FRONTEND=noninteractive PYTHONUNBUFFERED=1 VIRTUAL_ENV=/opt/cuprobe PATH=/opt/cuprobe/bin:$PATH
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 python3-venv python3-dev build-essential bubblewrap \
 && rm -rf /var/lib/apt/lists/* \
 && python3 -m venv /opt/cuprobe

WORKDIR /src
COPY pyproject.toml ./
COPY service service
COPY tasks tasks
COPY probes probes
COPY kernels kernels
COPY suites suites
# pycuda builds against the CUDA toolkit in this image.
RUN pip install --no-cache-dir ".[server,gpu]"

# Workers never touch CUDA themselves; each probe subprocess does, on the GPU its worker is pinned to.
ENTRYPOINT ["cuprobe"]
CMD ["worker"]
