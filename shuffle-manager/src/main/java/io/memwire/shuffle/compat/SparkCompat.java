package io.memwire.shuffle.compat;

import java.lang.reflect.Array;
import java.lang.reflect.Constructor;
import java.lang.reflect.InvocationTargetException;
import org.apache.spark.Aggregator;
import org.apache.spark.SparkConf;
import org.apache.spark.TaskContext;
import org.apache.spark.internal.config.ConfigEntry;
import org.apache.spark.network.netty.SparkTransportConf$;
import org.apache.spark.network.util.TransportConf;
import org.apache.spark.serializer.Serializer;
import org.apache.spark.util.collection.ExternalSorter;
import scala.Option;
import scala.math.Ordering;

/**
 * Version-specific calls into Spark's internals, resolved by reflection once.
 *
 * <ul>
 *   <li>{@code ExternalSorter}: 5 constructor arguments in 4.0, a 6th ({@code RowBasedChecksum[]})
 *       since 4.1.
 *   <li>{@code SparkConf.get(ConfigEntry)}: the typed getter, {@code private[spark]} in Scala and
 *       public in bytecode, the same in every 4.x.
 * </ul>
 */
public final class SparkCompat {
  private static final Constructor<?> SORTER;
  private static final Object EMPTY_ROW_CHECKSUMS;

  static {
    Constructor<?> five = null;
    Constructor<?> six = null;
    for (Constructor<?> c : ExternalSorter.class.getConstructors()) {
      int n = c.getParameterCount();
      if (n == 5 && c.getParameterTypes()[0] == TaskContext.class) {
        five = c;
      } else if (n == 6
          && c.getParameterTypes()[0] == TaskContext.class
          && c.getParameterTypes()[5].isArray()) {
        six = c;
      }
    }
    if (six != null) {
      SORTER = six;
      EMPTY_ROW_CHECKSUMS = Array.newInstance(six.getParameterTypes()[5].getComponentType(), 0);
    } else if (five != null) {
      SORTER = five;
      EMPTY_ROW_CHECKSUMS = null;
    } else {
      throw new ExceptionInInitializerError(
          "no known ExternalSorter constructor in Spark "
              + org.apache.spark.package$.MODULE$.SPARK_VERSION());
    }
  }

  private SparkCompat() {}

  /** The Spark version this JVM runs. */
  public static String sparkVersion() {
    return org.apache.spark.package$.MODULE$.SPARK_VERSION();
  }

  /**
   * {@code new ExternalSorter(context, aggregator, None, ordering, serializer[, no checksums])}.
   */
  @SuppressWarnings("unchecked")
  public static <K, V, C> ExternalSorter<K, V, C> newExternalSorter(
      TaskContext context,
      Option<Aggregator<K, V, C>> aggregator,
      Option<Ordering<K>> ordering,
      Serializer serializer) {
    try {
      if (EMPTY_ROW_CHECKSUMS != null) {
        return (ExternalSorter<K, V, C>)
            SORTER.newInstance(
                context, aggregator, Option.empty(), ordering, serializer, EMPTY_ROW_CHECKSUMS);
      }
      return (ExternalSorter<K, V, C>)
          SORTER.newInstance(context, aggregator, Option.empty(), ordering, serializer);
    } catch (InvocationTargetException e) {
      Throwable cause = e.getCause();
      if (cause instanceof RuntimeException) {
        throw (RuntimeException) cause;
      }
      throw new IllegalStateException("ExternalSorter constructor failed", cause);
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException(
          "cannot construct ExternalSorter on Spark " + sparkVersion(), e);
    }
  }

  /**
   * Spark's transport settings of its shuffle client (temp-file buffers use them); the same
   * five-argument factory on 4.0 to 4.2.
   */
  public static TransportConf shuffleTransportConf(SparkConf conf) {
    return SparkTransportConf$.MODULE$.fromSparkConf(
        conf, "shuffle", 0, Option.empty(), Option.empty());
  }

  /** Reads one of Spark's own typed settings ({@code org.apache.spark.internal.config}). */
  @SuppressWarnings("unchecked")
  public static <T> T get(SparkConf conf, ConfigEntry<?> entry) {
    return (T) conf.get(entry);
  }
}
