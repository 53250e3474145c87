// Draws from YCSB's own generators (site.ycsb:core:0.17.0) and prints what zkv's port must
// reproduce. Run by scripts/ycsb-check.sh; examples/draw.rs in crates/bench prints the same
// lines from zkv's generators.
//
// Usage: java -cp core-0.17.0.jar:. Draw N CASE...
// Output lines:
//   D <case>[:<part>] <value>    a deterministic value (doubles as raw IEEE bits in hex)
//   N <case> <draws>             number of draws of a sampled case
//   H <case> <label> <count>     how often a sampled case produced <label>
// Cases:
//   zipfian:ITEMS:THETA     ZipfianGenerator(ITEMS, THETA); label = item
//   scrambled:ITEMS         ScrambledZipfianGenerator(ITEMS); label = item
//   latest:RECORDS:EVERY    SkewedLatestGenerator over AcknowledgedCounterGenerator(RECORDS),
//                           one acknowledged insert before every EVERY-th draw (0: none);
//                           label = acknowledged limit - item (recency rank)
//   uniform:LB:UB           UniformLongGenerator(LB, UB); label = tenth of the range
//   hotspot:LB:UB:HOT:OPN   HotspotIntegerGenerator(LB, UB, HOT, OPN); label = tenth
//   ops:R:U:I:S:M           CoreWorkload's operation chooser for these proportions
//   fnv:X                   Utils.fnvhash64(X)
//   zeta:N:THETA            ZipfianGenerator.zetastatic(N, THETA)
//   grow:ITEMS:COUNT        zetan, eta, countforzeta after nextLong(COUNT) on
//                           ZipfianGenerator(ITEMS)
//   key:NUM:PAD:ORDER       CoreWorkload.buildKeyName(NUM) with zeropadding PAD and
//                           insertorder ORDER (hashed or ordered)
//   const                   ScrambledZipfianGenerator's ZETAN and ITEM_COUNT, the default
//                           zipfian constant, and the acknowledgement window size

import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;

import site.ycsb.Utils;
import site.ycsb.generator.AcknowledgedCounterGenerator;
import site.ycsb.generator.DiscreteGenerator;
import site.ycsb.generator.HotspotIntegerGenerator;
import site.ycsb.generator.NumberGenerator;
import site.ycsb.generator.ScrambledZipfianGenerator;
import site.ycsb.generator.SkewedLatestGenerator;
import site.ycsb.generator.UniformLongGenerator;
import site.ycsb.generator.ZipfianGenerator;
import site.ycsb.measurements.Measurements;
import site.ycsb.workloads.CoreWorkload;

public final class Draw {
  private Draw() {
  }

  public static void main(String[] args) throws Exception {
    long n = Long.parseLong(args[0]);
    for (int i = 1; i < args.length; i++) {
      run(args[i], n);
    }
  }

  private static void run(String spec, long n) throws Exception {
    String[] p = spec.split(":");
    switch (p[0]) {
      case "zipfian":
        sample(spec, n, new ZipfianGenerator(Long.parseLong(p[1]), Double.parseDouble(p[2])));
        break;
      case "scrambled":
        sample(spec, n, new ScrambledZipfianGenerator(Long.parseLong(p[1])));
        break;
      case "latest":
        latest(spec, n, Long.parseLong(p[1]), Long.parseLong(p[2]));
        break;
      case "uniform":
        tenths(spec, n, new UniformLongGenerator(Long.parseLong(p[1]), Long.parseLong(p[2])),
            Long.parseLong(p[1]), Long.parseLong(p[2]));
        break;
      case "hotspot":
        tenths(spec, n, new HotspotIntegerGenerator(Long.parseLong(p[1]), Long.parseLong(p[2]),
            Double.parseDouble(p[3]), Double.parseDouble(p[4])),
            Long.parseLong(p[1]), Long.parseLong(p[2]));
        break;
      case "ops":
        ops(spec, n, p);
        break;
      case "fnv":
        System.out.println("D " + spec + " " + Utils.fnvhash64(Long.parseLong(p[1])));
        break;
      case "zeta":
        zeta(spec, Long.parseLong(p[1]), Double.parseDouble(p[2]));
        break;
      case "grow":
        grow(spec, Long.parseLong(p[1]), Long.parseLong(p[2]));
        break;
      case "key":
        key(spec, Long.parseLong(p[1]), Integer.parseInt(p[2]), p[3]);
        break;
      case "const":
        constants();
        break;
      default:
        throw new IllegalArgumentException("unknown case " + spec);
    }
  }

  private static void sample(String spec, long n, NumberGenerator g) {
    Map<Long, Long> counts = new TreeMap<>();
    for (long i = 0; i < n; i++) {
      counts.merge(g.nextValue().longValue(), 1L, Long::sum);
    }
    print(spec, n, counts);
  }

  private static void latest(String spec, long n, long records, long every) {
    AcknowledgedCounterGenerator basis = new AcknowledgedCounterGenerator(records);
    SkewedLatestGenerator g = new SkewedLatestGenerator(basis);
    Map<Long, Long> counts = new TreeMap<>();
    for (long i = 0; i < n; i++) {
      if (every > 0 && i % every == 0) {
        basis.acknowledge(basis.nextValue());
      }
      long v = g.nextValue();
      counts.merge(basis.lastValue() - v, 1L, Long::sum);
    }
    print(spec, n, counts);
  }

  private static void tenths(String spec, long n, NumberGenerator g, long lb, long ub) {
    Map<Long, Long> counts = new TreeMap<>();
    long span = ub - lb + 1;
    for (long i = 0; i < n; i++) {
      long v = g.nextValue().longValue();
      counts.merge((v - lb) * 10 / span, 1L, Long::sum);
    }
    print(spec, n, counts);
  }

  private static void ops(String spec, long n, String[] p) throws Exception {
    Properties props = new Properties();
    String[] names = {"readproportion", "updateproportion", "insertproportion",
        "scanproportion", "readmodifywriteproportion"};
    for (int i = 0; i < names.length; i++) {
      props.setProperty(names[i], p[i + 1]);
    }
    Method m = CoreWorkload.class.getDeclaredMethod("createOperationGenerator", Properties.class);
    m.setAccessible(true);
    DiscreteGenerator g = (DiscreteGenerator) m.invoke(null, props);
    Map<String, Long> counts = new TreeMap<>();
    for (long i = 0; i < n; i++) {
      counts.merge(g.nextString(), 1L, Long::sum);
    }
    print(spec, n, counts);
  }

  private static void zeta(String spec, long n, double theta) throws Exception {
    Method m = ZipfianGenerator.class.getDeclaredMethod("zetastatic", long.class, double.class);
    m.setAccessible(true);
    System.out.println("D " + spec + " " + bits((Double) m.invoke(null, n, theta)));
  }

  private static void grow(String spec, long items, long count) throws Exception {
    ZipfianGenerator g = new ZipfianGenerator(items);
    Method m = ZipfianGenerator.class.getDeclaredMethod("nextLong", long.class);
    m.setAccessible(true);
    m.invoke(g, count);
    System.out.println("D " + spec + ":zetan " + bits(field(g, "zetan").getDouble(g)));
    System.out.println("D " + spec + ":eta " + bits(field(g, "eta").getDouble(g)));
    System.out.println("D " + spec + ":count " + field(g, "countforzeta").getLong(g));
  }

  private static void key(String spec, long num, int pad, String order) throws Exception {
    Measurements.setProperties(new Properties());
    CoreWorkload w = new CoreWorkload();
    field(w, "zeropadding").setInt(w, pad);
    field(w, "orderedinserts").setBoolean(w, order.equals("ordered"));
    Method m = CoreWorkload.class.getDeclaredMethod("buildKeyName", long.class);
    m.setAccessible(true);
    System.out.println("D " + spec + " " + m.invoke(w, num));
  }

  private static void constants() throws Exception {
    System.out.println("D const:zetan " + bits(ScrambledZipfianGenerator.ZETAN));
    System.out.println("D const:itemcount " + ScrambledZipfianGenerator.ITEM_COUNT);
    System.out.println("D const:zipfian " + bits(ZipfianGenerator.ZIPFIAN_CONSTANT));
    Field w = AcknowledgedCounterGenerator.class.getDeclaredField("WINDOW_SIZE");
    w.setAccessible(true);
    System.out.println("D const:window " + w.getInt(null));
  }

  private static Field field(Object o, String name) throws Exception {
    Class<?> c = o.getClass();
    while (true) {
      try {
        Field f = c.getDeclaredField(name);
        f.setAccessible(true);
        return f;
      } catch (NoSuchFieldException e) {
        c = c.getSuperclass();
        if (c == null) {
          throw e;
        }
      }
    }
  }

  private static String bits(double d) {
    return String.format("%016x", Double.doubleToRawLongBits(d));
  }

  private static <K> void print(String spec, long n, Map<K, Long> counts) {
    StringBuilder out = new StringBuilder();
    out.append("N ").append(spec).append(' ').append(n).append('\n');
    for (Map.Entry<K, Long> e : counts.entrySet()) {
      out.append("H ").append(spec).append(' ').append(e.getKey()).append(' ')
          .append(e.getValue()).append('\n');
    }
    System.out.print(out);
  }
}
