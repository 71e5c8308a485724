package io.memwire.shuffle.compat;

import io.memwire.shuffle.compat.spark35.ResolverWithTaskIdMap;
import java.lang.reflect.Array;
import java.lang.reflect.Constructor;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.BiFunction;
import org.apache.spark.Aggregator;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkEnv;
import org.apache.spark.TaskContext;
import org.apache.spark.internal.config.ConfigEntry;
import org.apache.spark.network.buffer.ManagedBuffer;
import org.apache.spark.network.client.StreamCallbackWithID;
import org.apache.spark.network.netty.SparkTransportConf$;
import org.apache.spark.network.util.TransportConf;
import org.apache.spark.serializer.Serializer;
import org.apache.spark.serializer.SerializerManager;
import org.apache.spark.shuffle.IndexShuffleBlockResolver;
import org.apache.spark.storage.BlockId;
import org.apache.spark.storage.BlockManager;
import org.apache.spark.util.collection.ExternalSorter;
import scala.Option;
import scala.math.Ordering;

/**
 * Version-specific calls into Spark's internals. Each difference between the Spark lines (3.5.0 to
 * 3.5.x on Scala 2.12 and 2.13, 4.0 to 4.2) is decided once, by a named probe of the API the
 * running Spark has (a constructor or method present), never by its version string, since vendors
 * backport changes. {@link #probes()} lists every probe's answer; the manager logs them once.
 *
 * <ul>
 *   <li>{@link #SORTER_PROBE}: {@code ExternalSorter} has 5 constructor arguments up to 4.0, a 6th
 *       ({@code RowBasedChecksum[]}) since 4.1.
 *   <li>{@link #RESOLVER_PROBE}: Spark's {@code IndexShuffleBlockResolver} constructors: {@code
 *       (conf)} on 4.x, only {@code (conf, blockManager, java.util.Map)} on 3.5.2+, {@code (conf,
 *       blockManager)} on 3.5.0 and 3.5.1.
 *   <li>{@link #TRANSPORT_CONF_PROBE}: {@code SparkTransportConf.fromSparkConf} takes 5 arguments
 *       on 4.x (an SSL option), 4 on 3.5.
 *   <li>{@link #TLS_RPC_PROBE}: whether Spark can encrypt its RPC and block transfers with TLS
 *       ({@code spark.ssl.rpc.*}, {@code SecurityManager.isSslRpcEnabled}; 4.x only).
 *   <li>{@link #envReady()}: whether {@code SparkEnv} exists while the shuffle manager is built
 *       (4.x executors: yes; 3.5 builds the manager before the block manager and {@code SparkEnv}).
 *   <li>{@code SparkConf.get(ConfigEntry)}: the typed getter, {@code private[spark]} in Scala and
 *       public in bytecode, the same on every line.
 * </ul>
 */
public final class SparkCompat {
  /** Name of the probe of {@code ExternalSorter}'s constructor. */
  public static final String SORTER_PROBE = "externalSorter";

  /** Name of the probe of {@code IndexShuffleBlockResolver}'s constructors. */
  public static final String RESOLVER_PROBE = "indexShuffleBlockResolver";

  /** Name of the probe of {@code SparkTransportConf.fromSparkConf}'s arity. */
  public static final String TRANSPORT_CONF_PROBE = "sparkTransportConf";

  /** Name of the probe of TLS for Spark's RPC ({@code spark.ssl.rpc.*}). */
  public static final String TLS_RPC_PROBE = "tlsRpc";

  /** How Spark's {@code IndexShuffleBlockResolver} can be constructed (subclassed). */
  public enum ResolverConstructor {
    /** {@code (SparkConf)}: Spark 4.x. */
    CONF,
    /** {@code (SparkConf, BlockManager, java.util.Map)}: Spark 3.5.2 and later 3.5 releases. */
    CONF_BLOCK_MANAGER_MAP,
    /** {@code (SparkConf, BlockManager)}: Spark 3.5.0 and 3.5.1. */
    CONF_BLOCK_MANAGER
  }

  private static final Constructor<?> SORTER;
  private static final Object EMPTY_ROW_CHECKSUMS;
  private static final ResolverConstructor RESOLVER = probeResolver();
  private static final Method TRANSPORT_CONF = probeTransportConf();
  private static final boolean TLS_RPC = probeTlsRpc();

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

  private static ResolverConstructor probeResolver() {
    Class<?> c = IndexShuffleBlockResolver.class;
    if (hasConstructor(c, SparkConf.class)) {
      return ResolverConstructor.CONF;
    }
    if (hasConstructor(c, SparkConf.class, BlockManager.class, java.util.Map.class)) {
      return ResolverConstructor.CONF_BLOCK_MANAGER_MAP;
    }
    if (hasConstructor(c, SparkConf.class, BlockManager.class)) {
      return ResolverConstructor.CONF_BLOCK_MANAGER;
    }
    throw new ExceptionInInitializerError(
        "no known IndexShuffleBlockResolver constructor in Spark " + sparkVersion());
  }

  private static boolean hasConstructor(Class<?> c, Class<?>... params) {
    try {
      return c.getConstructor(params) != null;
    } catch (NoSuchMethodException e) {
      return false;
    }
  }

  private static Method probeTransportConf() {
    Method four = null;
    for (Method m : SparkTransportConf$.class.getMethods()) {
      if (!m.getName().equals("fromSparkConf")) {
        continue;
      }
      if (m.getParameterCount() == 5) {
        return m;
      }
      if (m.getParameterCount() == 4) {
        four = m;
      }
    }
    if (four == null) {
      throw new ExceptionInInitializerError(
          "no known SparkTransportConf.fromSparkConf in Spark " + sparkVersion());
    }
    return four;
  }

  private static boolean probeTlsRpc() {
    try {
      return org.apache.spark.SecurityManager.class.getMethod("isSslRpcEnabled") != null;
    } catch (NoSuchMethodException e) {
      return false;
    }
  }

  /** Every probe's answer for the running Spark, by probe name (for logs and tests). */
  public static Map<String, String> probes() {
    Map<String, String> m = new LinkedHashMap<>();
    m.put(SORTER_PROBE, SORTER.getParameterCount() + " arguments");
    m.put(RESOLVER_PROBE, RESOLVER.name());
    m.put(TRANSPORT_CONF_PROBE, TRANSPORT_CONF.getParameterCount() + " arguments");
    m.put(TLS_RPC_PROBE, Boolean.toString(TLS_RPC));
    return m;
  }

  /** How Spark's {@code IndexShuffleBlockResolver} is constructed on the running Spark. */
  public static ResolverConstructor resolverConstructor() {
    return RESOLVER;
  }

  /**
   * True when the running Spark can encrypt its RPC and block transfers with TLS ({@code
   * spark.ssl.rpc.enabled}, Spark 4); on 3.5 only {@code spark.network.crypto.enabled} (and SASL
   * encryption) encrypt shuffle traffic and {@code spark.ssl.*} does not touch it.
   */
  public static boolean tlsRpcSupported() {
    return TLS_RPC;
  }

  /**
   * True when {@code SparkEnv} and its block manager exist. On 4.x executors they do while Spark
   * builds the shuffle manager; 3.5 builds it before both, so what needs them (the security secret,
   * the executor's identity) must wait for the manager's first use.
   */
  public static boolean envReady() {
    SparkEnv env = SparkEnv.get();
    return env != null && env.blockManager() != null;
  }

  /**
   * A subclass of Spark's {@code IndexShuffleBlockResolver} built through the constructor the
   * running Spark has, whose {@code putShuffleBlockAsStream} calls {@code hook}.
   */
  public static IndexShuffleBlockResolver newHookedResolver(
      SparkConf conf, BiFunction<BlockId, SerializerManager, StreamCallbackWithID> hook) {
    return newHookedResolver(conf, hook, (id, block) -> block);
  }

  /**
   * As {@link #newHookedResolver(SparkConf, BiFunction)}, with every block its {@code getBlockData}
   * finds (local reads, Spark's own transfer) passed through {@code blockCheck}, which returns it
   * or throws.
   */
  public static IndexShuffleBlockResolver newHookedResolver(
      SparkConf conf,
      BiFunction<BlockId, SerializerManager, StreamCallbackWithID> hook,
      BiFunction<BlockId, ManagedBuffer, ManagedBuffer> blockCheck) {
    switch (RESOLVER) {
      case CONF:
        return new HookedResolvers.OnConf(conf, hook, blockCheck);
      case CONF_BLOCK_MANAGER_MAP:
        return new ResolverWithTaskIdMap(conf, hook, blockCheck);
      case CONF_BLOCK_MANAGER:
        return new HookedResolvers.OnConfAndBlockManager(conf, hook, blockCheck);
    }
    throw new AssertionError(RESOLVER);
  }

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
   * Spark's transport settings of its shuffle client (temp-file buffers use them): {@code
   * fromSparkConf(conf, "shuffle", 0, None[, None])}, 4 arguments on 3.5, 5 on 4.x.
   */
  public static TransportConf shuffleTransportConf(SparkConf conf) {
    Object[] args =
        TRANSPORT_CONF.getParameterCount() == 5
            ? new Object[] {conf, "shuffle", 0, Option.empty(), Option.empty()}
            : new Object[] {conf, "shuffle", 0, Option.empty()};
    try {
      return (TransportConf) TRANSPORT_CONF.invoke(SparkTransportConf$.MODULE$, args);
    } catch (InvocationTargetException e) {
      Throwable cause = e.getCause();
      if (cause instanceof RuntimeException) {
        throw (RuntimeException) cause;
      }
      throw new IllegalStateException("SparkTransportConf.fromSparkConf failed", cause);
    } catch (IllegalAccessException e) {
      throw new IllegalStateException("cannot call SparkTransportConf.fromSparkConf", e);
    }
  }

  /** Reads one of Spark's own typed settings ({@code org.apache.spark.internal.config}). */
  @SuppressWarnings("unchecked")
  public static <T> T get(SparkConf conf, ConfigEntry<?> entry) {
    return (T) conf.get(entry);
  }
}
