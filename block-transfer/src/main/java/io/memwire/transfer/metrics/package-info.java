/**
 * Metrics declared once as typed constants ({@link io.memwire.transfer.metrics.Metric}): the
 * transport's in {@link io.memwire.transfer.metrics.TransportMetrics}. Snapshots, exporters and
 * documentation tables are generated from the declarations. Nothing here knows Spark.
 */
package io.memwire.transfer.metrics;
