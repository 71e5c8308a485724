package io.memwire.shuffle.compat;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;
import scala.collection.JavaConverters$;

/**
 * Scala collections from Java code that runs on Scala 2.12 and 2.13 builds of Spark alike. Only
 * {@code scala.collection.JavaConverters} (in both; {@code scala.jdk.javaapi.CollectionConverters}
 * is 2.13 only) and the types whose method descriptors are the same in both are used. A Spark
 * method whose return type is {@code Seq} changes descriptor between the builds ({@code
 * scala.collection.Seq} on 2.12, {@code scala.collection.immutable.Seq} on 2.13), so {@link
 * #callSeq} calls it by name.
 */
@SuppressWarnings("deprecation") // JavaConverters: deprecated on 2.13, the one API on both
public final class ScalaCollections {
  private ScalaCollections() {}

  /** A Scala iterator over a Java one. */
  public static <T> scala.collection.Iterator<T> asScala(java.util.Iterator<T> it) {
    return JavaConverters$.MODULE$.asScalaIterator(it);
  }

  /**
   * A Scala immutable list of the elements (an immutable list is a {@code scala.collection.Seq} on
   * 2.12 and a {@code scala.collection.immutable.Seq} on 2.13: what Spark's Seq parameters take).
   */
  public static <T> scala.collection.immutable.List<T> asScalaList(java.util.List<T> list) {
    return JavaConverters$.MODULE$.asScalaBuffer(list).toList();
  }

  /** The elements of a Scala collection, in order, as a new Java list. */
  public static <T> List<T> asJava(scala.collection.Iterable<T> c) {
    List<T> out = new ArrayList<>();
    scala.collection.Iterator<T> it = c.iterator();
    while (it.hasNext()) {
      out.add(it.next());
    }
    return out;
  }

  /**
   * Calls a public no-argument method returning a Scala collection (for example {@code
   * SparkContext.getExecutorIds()} or {@code RDD.dependencies()}) by name, and returns its
   * elements.
   *
   * @throws IllegalArgumentException when {@code target} has no such method or it does not return a
   *     Scala collection
   */
  @SuppressWarnings("unchecked")
  public static <T> List<T> callSeq(Object target, String method) {
    Object result;
    try {
      Method m = target.getClass().getMethod(method);
      result = m.invoke(target);
    } catch (NoSuchMethodException | IllegalAccessException e) {
      throw new IllegalArgumentException(
          target.getClass().getName() + " has no public " + method + "()", e);
    } catch (InvocationTargetException e) {
      Throwable cause = e.getCause();
      if (cause instanceof RuntimeException) {
        throw (RuntimeException) cause;
      }
      throw new IllegalStateException(method + "() failed", cause);
    }
    if (!(result instanceof scala.collection.Iterable)) {
      throw new IllegalArgumentException(
          method + "() returned " + (result == null ? "null" : result.getClass().getName()));
    }
    return asJava((scala.collection.Iterable<T>) result);
  }
}
