# threadline gateway. Build: docker build -t threadline .
FROM node:24-slim AS build
WORKDIR /app
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
# better-sqlite3 12 is compiled here, always against the headers of Node 24.18: built with
# those of 24.19 or later, it aborts the process when a Statement is garbage-collected
# (node::ObjectWrap changed). The addon built from 24.18's headers runs on every Node 24.
ENV npm_config_build_from_source=true \
    npm_config_target=24.18.0
COPY package.json package-lock.json ./
RUN npm ci
COPY tsconfig.json tsconfig.build.json ./
COPY scripts ./scripts
COPY src ./src
RUN npm run build && npm prune --omit=dev

FROM node:24-slim
# espeak-ng and opusenc: the tts tool's engine and encoder; without them /tts says what is missing.
RUN apt-get update && apt-get install -y --no-install-recommends espeak-ng opus-tools && rm -rf /var/lib/apt/lists/*
# HOST=0.0.0.0 needs THREADLINE_WEBHOOK_TOKEN at run time (docker run -e), never baked into
# the image: without it the gateway refuses to start.
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8787 \
    THREADLINE_DATA_DIR=/data
WORKDIR /app
COPY --from=build --chown=node:node /app/node_modules ./node_modules
COPY --from=build --chown=node:node /app/dist ./dist
COPY --chown=node:node package.json ./
RUN mkdir -p /data && chown node:node /data
USER node
VOLUME /data
EXPOSE 8787
# Docker keeps one health status, read by compose's depends_on, proxies and Swarm as "send it
# traffic": /v1/ready, not /v1/health (Kubernetes probes both). No curl here: node's fetch.
HEALTHCHECK --interval=15s --timeout=5s --start-period=60s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 8787) + '/v1/ready', { signal: AbortSignal.timeout(4000) }).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# node itself, in exec form: SIGTERM from docker stop reaches the gateway (no shell, no npm between).
CMD ["node", "--import", "./dist/telemetry/register.js", "dist/cli/main.js"]
