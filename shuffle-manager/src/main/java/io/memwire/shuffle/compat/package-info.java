/**
 * Every Spark-version-specific call of the manager, so one jar runs on Spark 4.0, 4.1 and 4.2 (and
 * a 3.5 build can be added here later).
 */
package io.memwire.shuffle.compat;
