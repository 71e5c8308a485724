package io.memwire.tpcds.worker;

import java.util.Map;

/** The environment a worker runs queries in, as reported when it is ready. */
public record ClusterInfo(
    String configName,
    String sparkVersion,
    String master,
    int executors,
    String javaVersion,
    Map<String, String> sparkConf,
    double startSeconds) {}
