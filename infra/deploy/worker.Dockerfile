# syntax=docker/dockerfile:1
# The worker image: every pool (orchestrator, rollout, trainer) and the `selfplay` CLI, one image.
#   docker build -f infra/deploy/worker.Dockerfile -t selfplay-worker .        (from the repository root)
#   docker run selfplay-worker workers/main.ts orchestrator
#   docker run selfplay-worker cli/main.ts start --recipe spice
# The install steps live in install-worker.sh, which CI runs in a clean directory (check-install.sh).
# Node.js 22, as package.json's engines require; Debian's python3 (3.11) for the orchestrator's Python modules.
ARG NODE_IMAGE=node:22-bookworm-slim

FROM ${NODE_IMAGE} AS install
RUN apt-get update && apt-get install -y --no-install-recommends python3 python3-venv \
    && rm -rf /var/lib/apt/lists/*
COPY . /src
RUN bash /src/infra/deploy/install-worker.sh /src /app

FROM ${NODE_IMAGE}
# The same python3 the install stage made /app/python's environment with (a venv links its interpreter).
RUN apt-get update && apt-get install -y --no-install-recommends python3 \
    && rm -rf /var/lib/apt/lists/*
ENV NODE_ENV=production \
    SELFPLAY_WORKFLOW_BUNDLE=/app/workflow-bundle.js \
    SELFPLAY_PYTHON=/app/python/bin/python \
    SELFPLAY_PROJECT_METRICS_PORT=9465
COPY --from=install --chown=root:root /app /app
# Where the rollout pool copies snapshots for vLLM / SGLang (a shared volume mounted over it keeps this owner).
RUN mkdir /snapshots && chown 1000:1000 /snapshots
WORKDIR /app
# The `node` user (uid 1000) of the base image; nothing under /app is writable by it.
USER 1000:1000
EXPOSE 9464 9465
ENTRYPOINT ["node", "--import", "tsx"]
CMD ["workers/main.ts"]
