/**
 * Every Spark-version-specific call of the manager, so one jar runs on Spark 3.5.0 to 3.5.x (Scala
 * 2.12 and 2.13 builds) and 4.0 to 4.2: {@link io.memwire.shuffle.compat.SparkCompat} (named probes
 * of Spark's API) and {@link io.memwire.shuffle.compat.ScalaCollections} (Scala collections through
 * the API both Scala versions share).
 */
package io.memwire.shuffle.compat;
