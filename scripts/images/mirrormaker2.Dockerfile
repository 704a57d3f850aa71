# MirrorMaker 2 3.7.1 in dedicated mode: the Kafka 3.7.1 image (its jars include connect-mirror)
# with MirrorMaker as the entry point. Run it with the mm2.properties path and --clusters.
ARG KAFKA
FROM ${KAFKA}
ENTRYPOINT ["/opt/kafka/entrypoint.sh", "mirrormaker2"]
