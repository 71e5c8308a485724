package io.memwire.shuffle.compat;

import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.lang.reflect.Constructor;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import java.util.stream.Stream;

/**
 * Checks that compiled classes link against the Spark and Scala on this JVM's class path: every
 * class, method, constructor and field they reference in a package of Spark ({@code
 * org/apache/spark/}) or Scala ({@code scala/}) must exist there with the exact descriptor the
 * compiler wrote. The JVM resolves these references lazily, so a mismatch (a Spark 4 constructor
 * absent in 3.5, a {@code scala.collection.immutable.Seq} return type that is {@code
 * scala.collection.Seq} on Scala 2.12) would otherwise show only when that line runs.
 */
final class Linkage {
  private Linkage() {}

  /** One reference that does not resolve. */
  record Broken(String fromClass, String reference, String why) {
    @Override
    public String toString() {
      return fromClass + " -> " + reference + ": " + why;
    }
  }

  /** The directory or jar a class was loaded from. */
  static Path locationOf(Class<?> c) {
    try {
      return Path.of(c.getProtectionDomain().getCodeSource().getLocation().toURI());
    } catch (URISyntaxException e) {
      throw new IllegalStateException(e);
    }
  }

  /** Every class file under a directory or in a jar whose name starts with {@code prefix}. */
  static Map<String, byte[]> classFiles(Path location, String prefix) throws IOException {
    Map<String, byte[]> out = new TreeMap<>();
    if (Files.isDirectory(location)) {
      try (Stream<Path> files = Files.walk(location)) {
        for (Path p : (Iterable<Path>) files::iterator) {
          String rel = location.relativize(p).toString().replace('\\', '/');
          if (rel.endsWith(".class") && rel.startsWith(prefix)) {
            out.put(rel.substring(0, rel.length() - 6), Files.readAllBytes(p));
          }
        }
      }
    } else {
      try (JarFile jar = new JarFile(location.toFile())) {
        for (JarEntry e : (Iterable<JarEntry>) jar.stream()::iterator) {
          if (e.getName().endsWith(".class") && e.getName().startsWith(prefix)) {
            try (InputStream in = jar.getInputStream(e)) {
              out.put(e.getName().substring(0, e.getName().length() - 6), in.readAllBytes());
            }
          }
        }
      }
    }
    return out;
  }

  /** The references of one class file that do not resolve on this class path. */
  static List<Broken> check(String className, byte[] classFile, ClassLoader loader)
      throws IOException {
    DataInputStream in = new DataInputStream(new java.io.ByteArrayInputStream(classFile));
    if (in.readInt() != 0xCAFEBABE) {
      throw new IOException(className + " is not a class file");
    }
    in.readUnsignedShort();
    in.readUnsignedShort();
    int n = in.readUnsignedShort();
    int[] tag = new int[n];
    int[] a = new int[n];
    int[] b = new int[n];
    String[] utf = new String[n];
    for (int i = 1; i < n; i++) {
      tag[i] = in.readUnsignedByte();
      switch (tag[i]) {
        case 1 -> utf[i] = in.readUTF();
        case 3, 4 -> in.readInt();
        case 5, 6 -> {
          in.readLong();
          i++;
        }
        case 7, 8, 16, 19, 20 -> a[i] = in.readUnsignedShort();
        case 9, 10, 11, 12, 17, 18 -> {
          a[i] = in.readUnsignedShort();
          b[i] = in.readUnsignedShort();
        }
        case 15 -> {
          in.readUnsignedByte();
          in.readUnsignedShort();
        }
        default -> throw new IOException(className + ": constant pool tag " + tag[i]);
      }
    }
    List<Broken> broken = new ArrayList<>();
    for (int i = 1; i < n; i++) {
      if (tag[i] == 7) {
        String owner = utf[a[i]];
        if (checked(owner) && load(owner, loader) == null) {
          broken.add(new Broken(className, owner, "class missing"));
        }
      } else if (tag[i] == 9 || tag[i] == 10 || tag[i] == 11) {
        String owner = utf[a[a[i]]];
        if (!checked(owner)) {
          continue;
        }
        String name = utf[a[b[i]]];
        String desc = utf[b[b[i]]];
        Class<?> c = load(owner, loader);
        String ref = owner + "." + name + desc;
        if (c == null) {
          broken.add(new Broken(className, ref, "class missing"));
        } else if (tag[i] == 9 ? !hasField(c, name, desc) : !hasMethod(c, name, desc)) {
          broken.add(new Broken(className, ref, "no such " + (tag[i] == 9 ? "field" : "method")));
        }
      }
    }
    return broken;
  }

  private static boolean checked(String internalName) {
    return internalName.startsWith("org/apache/spark/") || internalName.startsWith("scala/");
  }

  private static Class<?> load(String internalName, ClassLoader loader) {
    if (internalName.startsWith("[")) {
      return Object[].class; // array types: nothing to resolve beyond their elements
    }
    try {
      return Class.forName(internalName.replace('/', '.'), false, loader);
    } catch (ClassNotFoundException | LinkageError e) {
      return null;
    }
  }

  private static boolean hasField(Class<?> c, String name, String desc) {
    for (Class<?> k : supertypes(c)) {
      for (Field f : k.getDeclaredFields()) {
        if (f.getName().equals(name) && descriptor(f.getType()).equals(desc)) {
          return true;
        }
      }
    }
    return false;
  }

  private static boolean hasMethod(Class<?> c, String name, String desc) {
    if (c == Object[].class) {
      return true;
    }
    if (name.equals("<init>")) {
      for (Constructor<?> k : c.getDeclaredConstructors()) {
        if (descriptor(k.getParameterTypes(), void.class).equals(desc)) {
          return true;
        }
      }
      return false;
    }
    for (Class<?> k : supertypes(c)) {
      for (Method m : k.getDeclaredMethods()) {
        if (m.getName().equals(name)
            && descriptor(m.getParameterTypes(), m.getReturnType()).equals(desc)) {
          return true;
        }
      }
    }
    return false;
  }

  /** The class, its superclasses and every interface they implement (what the JVM searches). */
  private static List<Class<?>> supertypes(Class<?> c) {
    List<Class<?>> out = new ArrayList<>();
    Set<Class<?>> seen = new HashSet<>();
    Deque<Class<?>> todo = new ArrayDeque<>();
    todo.add(c);
    while (!todo.isEmpty()) {
      Class<?> k = todo.poll();
      if (!seen.add(k)) {
        continue;
      }
      out.add(k);
      if (k.getSuperclass() != null) {
        todo.add(k.getSuperclass());
      }
      todo.addAll(List.of(k.getInterfaces()));
    }
    if (c.isInterface()) {
      out.add(Object.class);
    }
    return out;
  }

  private static String descriptor(Class<?>[] params, Class<?> ret) {
    StringBuilder sb = new StringBuilder("(");
    for (Class<?> p : params) {
      sb.append(descriptor(p));
    }
    return sb.append(')').append(descriptor(ret)).toString();
  }

  private static String descriptor(Class<?> t) {
    if (t.isArray()) {
      return t.getName().replace('.', '/');
    }
    if (!t.isPrimitive()) {
      return "L" + t.getName().replace('.', '/') + ";";
    }
    if (t == void.class) {
      return "V";
    } else if (t == boolean.class) {
      return "Z";
    } else if (t == byte.class) {
      return "B";
    } else if (t == char.class) {
      return "C";
    } else if (t == short.class) {
      return "S";
    } else if (t == int.class) {
      return "I";
    } else if (t == long.class) {
      return "J";
    } else if (t == float.class) {
      return "F";
    } else if (t == double.class) {
      return "D";
    }
    throw new IllegalArgumentException(t.toString());
  }
}
