/**
 * Classes of the shuffle manager compiled against Spark 3.5 because they call a constructor that
 * only 3.5.2 and later 3.5 releases have; {@code io.memwire.shuffle.compat.SparkCompat} picks them
 * at run time and never on Spark 4.
 */
package io.memwire.shuffle.compat.spark35;
