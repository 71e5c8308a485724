/**
 * Starts a real multi-process Spark cluster from Maven jars, for tests, benchmarks and the main
 * job.
 */
package io.memwire.localcluster;
