/**
 * Service mode's Spark plugin ({@code spark.shuffle.sort.io.plugin.class}): Spark's own map-output
 * writers, and driver components that report reliable storage because every output is handed to the
 * node's Memwire shuffle service.
 */
package io.memwire.shuffle.dataio;
