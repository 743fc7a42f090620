# syntax=docker/dockerfile:1
# The hook server image: production dependencies only, non-root, node as PID 1 (it handles SIGTERM itself).
# It never starts an embedded database: without DATABASE_URL (or PSQL_* / PG*) it exits with an error.
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json ./
COPY hooks ./hooks
COPY scripts/build.ts ./scripts/
COPY dev/command.ts ./dev/
RUN npm run build

FROM node:20-bookworm-slim
WORKDIR /app
COPY package.json package-lock.json ./
# npm's cache (and its logs) in a folder removed in the same step, so the image never holds it.
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund --cache /tmp/npm-cache && rm -rf /tmp/npm-cache
COPY --from=build /app/dist ./dist
USER 1000:1000
ENV HOST=0.0.0.0 PORT=8080 HOOKS_PROBE_PORT=8081
# 8080: the hooks (HTTPS when HOOKS_TLS_CERT is set); 8081: /healthz, /readyz and /metrics, always plain HTTP.
EXPOSE 8080 8081
ENTRYPOINT ["node", "dist/server.js"]
