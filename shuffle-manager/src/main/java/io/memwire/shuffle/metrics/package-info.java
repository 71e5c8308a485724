/**
 * Memwire's shuffle metrics in Spark's own metrics system: a Spark plugin ({@code spark.plugins})
 * that registers them in each executor's and the driver's metric registry and collects every
 * executor's totals on the driver.
 */
package io.memwire.shuffle.metrics;
