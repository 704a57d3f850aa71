# kmigrate's image: kverify, kreconcile and kmirror as static binaries, nothing else (no shell,
# no package manager), run as a non-root user. Build context: a directory holding bin/ with the
# three binaries built with CGO_ENABLED=0 (scripts/images.sh does it:
#   make build BIN=<ctx>/bin CGO_ENABLED=0, then docker build <ctx>).
# TLS: the image has no system CA bundle; give the CA of your clusters as a file (the
# ssl.truststore / --*-ca flags of mm2.properties), or mount one and set SSL_CERT_FILE.
FROM scratch
COPY bin/kverify bin/kreconcile bin/kmirror /usr/local/bin/
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/kmirror"]
