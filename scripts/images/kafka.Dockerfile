# A Kafka runtime on kmigrate's local Java 17 base (scripts/images.sh builds it). The build
# copies files only: the jars come from scripts/fetch-kafka.sh's cache, nothing is downloaded.
ARG BASE
FROM ${BASE}
ARG KAFKA_VERSION
COPY lib/ /opt/kafka/lib/
COPY kafka-entrypoint.sh /opt/kafka/entrypoint.sh
COPY log4j.properties log4j2.properties /opt/kafka/config/
ENV KAFKA_VERSION=${KAFKA_VERSION}
USER kafka
WORKDIR /var/lib/kafka
ENTRYPOINT ["/opt/kafka/entrypoint.sh"]
