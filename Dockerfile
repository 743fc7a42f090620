# syntax=docker/dockerfile:1
# The hook server image: production dependencies only, non-root, node as PID 1 (it handles SIGTERM itself).
# It never starts an embedded database: without DATABASE_URL (or PSQL_* / PG*) it exits with an error.
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY hooks ./hooks
RUN npm run build

FROM node:20-bookworm-slim
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force
COPY --from=build /app/dist ./dist
USER 1000:1000
ENV PORT=8080
EXPOSE 8080
ENTRYPOINT ["node", "dist/server.js"]
