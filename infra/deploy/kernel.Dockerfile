# syntax=docker/dockerfile:1
# The kernel image: the training and sampling kernel (infra/kernels), `python -m selfplay_kernel`.
#   docker build -f infra/deploy/kernel.Dockerfile -t selfplay-kernel .        (from the repository root)
#   docker build -f infra/deploy/kernel.Dockerfile --build-arg TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu \
#     -t selfplay-kernel:cpu .                                                 (a CPU-only image, 1/10 the size)
#   docker run --gpus all selfplay-kernel serve --model Qwen/Qwen3-0.6B --policy policy --host 0.0.0.0 --port 8000
# PyPI's torch wheels carry their CUDA libraries, so the base needs no CUDA toolkit: only the host's NVIDIA
# driver, which the container runtime mounts. The install steps live in install-kernel.sh, which CI runs in a
# clean directory (check-install.sh).
ARG PYTHON_IMAGE=python:3.12-slim-bookworm

FROM ${PYTHON_IMAGE} AS install
ARG TORCH_INDEX_URL=
COPY infra/kernels /src/infra/kernels
COPY infra/deploy/install-kernel.sh /src/infra/deploy/install-kernel.sh
RUN TORCH_INDEX_URL="${TORCH_INDEX_URL}" bash /src/infra/deploy/install-kernel.sh /src/infra/kernels /opt/kernel

FROM ${PYTHON_IMAGE}
COPY --from=install /opt/kernel /opt/kernel
ENV PATH=/opt/kernel/bin:${PATH} \
    PYTHONUNBUFFERED=1 \
    HF_HOME=/cache/huggingface
RUN mkdir -p /cache/huggingface && chown 1000:1000 /cache/huggingface
USER 1000:1000
EXPOSE 8000
ENTRYPOINT ["python", "-m", "selfplay_kernel"]
CMD ["--help"]
