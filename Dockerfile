# syntax=docker/dockerfile:1
# Multi-stage build: one image holds both binaries; compose picks the command.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# The worker is built with cgo: it loads the image's libcrypto at run time
# for RSA DKIM signatures (docs/dkim.md); distroless/base has glibc and
# libssl3.
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/api ./cmd/api \
 && CGO_ENABLED=1 go build -trimpath -ldflags="-s -w" -o /out/worker ./cmd/worker

FROM gcr.io/distroless/base-debian12:nonroot
COPY --from=build /out/api /out/worker /usr/local/bin/
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/api"]
